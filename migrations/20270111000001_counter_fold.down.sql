-- Reverts 20270111000001_counter_fold.up.sql: slot 16's counts go back to
-- stripe 0 before the constraint allows stripes 0-15 only again.
DROP FUNCTION IF EXISTS fold_row_counts(integer);
INSERT INTO account_row_counts AS c (resource, account_id, slot, n, changes)
SELECT resource, account_id, 0, n, changes FROM account_row_counts WHERE slot = 16
ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n, changes = c.changes + EXCLUDED.changes;
DELETE FROM account_row_counts WHERE slot = 16;
ALTER TABLE account_row_counts DROP CONSTRAINT account_row_counts_slot_check;
ALTER TABLE account_row_counts ADD CONSTRAINT account_row_counts_slot_check CHECK (slot BETWEEN 0 AND 15);
