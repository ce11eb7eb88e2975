-- Reverts 20270202000001_erase_leaves_nothing.up.sql. The usage of
-- accounts that no longer exist is deleted (the foreign key of
-- 20261229000001 cascades again).
DROP INDEX tokens_dead_at_idx;
DROP INDEX audit_events_imeis_idx;
DROP FUNCTION fleet_audit_imeis(jsonb);
DELETE FROM usage_daily u WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = u.account_id);
ALTER TABLE usage_daily DROP COLUMN billed_account_id, DROP COLUMN ancestors,
    ADD CONSTRAINT usage_daily_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE;
DROP INDEX idempotency_keys_created_at_idx;
DROP INDEX idempotency_keys_subject_idx;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_subject_check, DROP COLUMN subject_id, DROP COLUMN subject;
