-- Quotas on what a customer creates (docs/design.md §12, docs/management.md
-- "Quotas"): an account's overrides of the platform defaults
-- (FLEET_QUOTA_*), each the largest number of the account's subaccounts
-- (the accounts directly below it), active tokens, devices and passengers.
-- NULL: the platform default applies. The counting is storage's
-- (storage/quotas.go), under a lock of the account row in the create's own
-- transaction.
ALTER TABLE accounts
    ADD COLUMN quota_subaccounts bigint CHECK (quota_subaccounts >= 0),
    ADD COLUMN quota_tokens bigint CHECK (quota_tokens >= 0),
    ADD COLUMN quota_devices bigint CHECK (quota_devices >= 0),
    ADD COLUMN quota_passengers bigint CHECK (quota_passengers >= 0);
