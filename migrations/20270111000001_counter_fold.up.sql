-- Folding the counters' stripes (docs/architecture.md, "Counters";
-- docs/decisions.md, "Folding the counters").
--
-- Writers add to the stripe of their backend (slot = pid % 16), so an
-- account written through many connections ends up with up to 16 counter
-- rows per resource, and every total or version read sums them all: the
-- admin's search version read grew from 4-11 ms to 55 ms once the services
-- counters had spread to 98,750 rows. fold_row_counts(batch) moves the
-- stripes of accounts that have more than one counter row into slot 16,
-- which no writer uses (writers use 0-15): up to batch rows per call,
-- oldest accounts first, taking only rows no writer holds (FOR UPDATE
-- SKIP LOCKED), so a fold never waits for a writer and a writer waits for
-- a fold only for the rows the fold took; slot 16 is written by folds
-- alone, in (resource, account_id) order, so two folds wait for each other
-- without a cycle. Sums of n and of changes per account are unchanged;
-- the DELETE bumps count_generation (its trigger, migration
-- 20270110000001), so kept totals are counted once more after a fold.
-- It returns the number of stripe rows folded.
ALTER TABLE account_row_counts DROP CONSTRAINT account_row_counts_slot_check;
ALTER TABLE account_row_counts ADD CONSTRAINT account_row_counts_slot_check CHECK (slot BETWEEN 0 AND 16);

CREATE FUNCTION fold_row_counts(batch integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    folded bigint;
BEGIN
    WITH spread AS (
        SELECT resource, account_id FROM account_row_counts
        GROUP BY resource, account_id HAVING count(*) > 1
    ), picked AS (
        SELECT c.resource, c.account_id, c.slot FROM account_row_counts c
        JOIN spread USING (resource, account_id)
        WHERE c.slot < 16
        ORDER BY c.resource, c.account_id, c.slot
        LIMIT batch
        FOR UPDATE OF c SKIP LOCKED
    ), moved AS (
        DELETE FROM account_row_counts c USING picked p
        WHERE c.resource = p.resource AND c.account_id = p.account_id AND c.slot = p.slot
        RETURNING c.resource, c.account_id, c.n, c.changes
    ), summed AS (
        SELECT resource, account_id, sum(n)::bigint AS n, sum(changes)::bigint AS changes, count(*) AS rows
        FROM moved GROUP BY resource, account_id
    ), added AS (
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n, changes)
        SELECT resource, account_id, 16, n, changes FROM summed ORDER BY resource, account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n, changes = c.changes + EXCLUDED.changes
    )
    SELECT COALESCE(sum(rows), 0) INTO folded FROM summed;
    RETURN folded;
END
$$;
