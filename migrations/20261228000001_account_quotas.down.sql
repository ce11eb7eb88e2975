ALTER TABLE accounts
    DROP COLUMN quota_subaccounts,
    DROP COLUMN quota_tokens,
    DROP COLUMN quota_devices,
    DROP COLUMN quota_passengers;
