-- Reverts 20270110000001_count_versions.up.sql: list totals of filtered
-- and searched lists are counted on every page again.
DROP TRIGGER IF EXISTS accounts_count_generation_truncate ON accounts;
DROP TRIGGER IF EXISTS accounts_count_generation_delete ON accounts;
DROP TRIGGER IF EXISTS accounts_count_generation_update ON accounts;
DROP TRIGGER IF EXISTS account_row_counts_generation_rekey ON account_row_counts;
DROP TRIGGER IF EXISTS account_row_counts_generation_truncate ON account_row_counts;
DROP TRIGGER IF EXISTS account_row_counts_generation_delete ON account_row_counts;
DROP FUNCTION IF EXISTS count_generation_bump_deleted();
DROP FUNCTION IF EXISTS count_generation_bump();
DROP TRIGGER IF EXISTS services_count_version ON services;
DROP TRIGGER IF EXISTS objects_count_version ON objects;
DROP TRIGGER IF EXISTS reports_count_version ON reports;
DROP TRIGGER IF EXISTS events_count_version ON events;
DROP TRIGGER IF EXISTS passengers_count_version ON passengers;
DROP FUNCTION IF EXISTS version_table(regclass, text[]);
DROP FUNCTION IF EXISTS count_changes();

CREATE OR REPLACE FUNCTION count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    stripe smallint := pg_backend_pid() % 16;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM account_row_counts WHERE resource = TG_TABLE_NAME;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n)
        SELECT TG_TABLE_NAME, r.account_id, stripe, count(*) FROM new_rows r GROUP BY r.account_id ORDER BY r.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n)
        SELECT TG_TABLE_NAME, r.account_id, stripe, -count(*) FROM old_rows r GROUP BY r.account_id ORDER BY r.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'UPDATE' THEN
        -- Only accounts whose count changed: an update that keeps the
        -- account adds and removes the same row and writes nothing.
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n)
        SELECT TG_TABLE_NAME, d.account_id, stripe, sum(d.n)
        FROM (SELECT r.account_id, 1 AS n FROM new_rows r UNION ALL SELECT r.account_id, -1 FROM old_rows r) d
        GROUP BY d.account_id HAVING sum(d.n) <> 0 ORDER BY d.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END
$$;

DROP TABLE IF EXISTS count_generation;
ALTER TABLE account_row_counts DROP COLUMN IF EXISTS changes;
