ALTER TABLE webhooks DROP COLUMN proven_at;
