-- Search totals without recounting per page (docs/decisions.md, "Search
-- totals"; docs/performance.md, "Search totals").
--
-- The total of a filtered or searched list is kept (storage/totals.go)
-- with the version of its scope it was counted at, and reused while that
-- version is unchanged. The version of a scope is read from the row
-- counters with the scope's counter form (storage/counters.go):
--
--   (the server's pg_postmaster_start_time(), count_generation.generation,
--    sum(account_row_counts.changes) over the scope's counter rows)
--
-- changes only grows: every statement that inserts or deletes rows adds 1
-- to the counter row (resource, account, stripe) of each account it
-- touches (count_rows()), and every row update that changes a column a
-- filter or search reads, or the row's account, adds 1 to the counter rows
-- of the row's old and new account (count_changes(), installed per table
-- by version_table with the descriptor's filter and search columns). The
-- increments are made under the counter row's lock, by the writing
-- transaction, so a snapshot that sees one more committed write to the
-- scope sees a strictly larger sum. Updates of the other columns (the due
-- index's meter_due, the objects' odometer) add nothing: the trigger's
-- WHEN clause compares the columns and calls no function.
--
-- The set of counter rows a scope covers changes in three ways only: a
-- counter row is created (by the upserts above, with changes >= 1: the sum
-- grows), a counter row is deleted or re-keyed (erase, TRUNCATE,
-- uncount_table, ResumeRowCounting), or the accounts the scope resolves
-- change (an account's manager_id or id updated, an account deleted). The
-- last two bump count_generation, one row, by the triggers below; they are
-- rare operations.
ALTER TABLE account_row_counts ADD COLUMN changes bigint NOT NULL DEFAULT 0;

CREATE TABLE count_generation (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    generation bigint  NOT NULL
);
INSERT INTO count_generation (one, generation) VALUES (true, 0);

CREATE OR REPLACE FUNCTION count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    stripe smallint := pg_backend_pid() % 16;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM account_row_counts WHERE resource = TG_TABLE_NAME;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n, changes)
        SELECT TG_TABLE_NAME, r.account_id, stripe, count(*), 1 FROM new_rows r GROUP BY r.account_id ORDER BY r.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n, changes = c.changes + 1;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n, changes)
        SELECT TG_TABLE_NAME, r.account_id, stripe, -count(*), 1 FROM old_rows r GROUP BY r.account_id ORDER BY r.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n, changes = c.changes + 1;
    ELSIF TG_OP = 'UPDATE' THEN
        -- Only accounts whose count changed: an update that keeps the
        -- account adds and removes the same row and writes nothing.
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n, changes)
        SELECT TG_TABLE_NAME, d.account_id, stripe, sum(d.n), 1
        FROM (SELECT r.account_id, 1 AS n FROM new_rows r UNION ALL SELECT r.account_id, -1 FROM old_rows r) d
        GROUP BY d.account_id HAVING sum(d.n) <> 0 ORDER BY d.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n, changes = c.changes + 1;
    END IF;
    RETURN NULL;
END
$$;

-- count_changes() is the row trigger of version_table: the row's old and
-- new account (one when they are the same), in id order, get 1 more
-- change in the writing backend's stripe.
CREATE FUNCTION count_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    stripe smallint := pg_backend_pid() % 16;
BEGIN
    INSERT INTO account_row_counts AS c (resource, account_id, slot, n, changes)
    SELECT TG_TABLE_NAME, v.account_id, stripe, 0, 1
    FROM (VALUES (OLD.account_id), (NEW.account_id)) v (account_id) GROUP BY v.account_id ORDER BY v.account_id
    ON CONFLICT (resource, account_id, slot) DO UPDATE SET changes = c.changes + 1;
    RETURN NULL;
END
$$;

-- version_table(t, columns) installs <t>_count_version: after an update
-- of a row of t whose account_id or one of columns (the descriptor's
-- filter and search columns) is distinct from before, count_changes().
-- It replaces the trigger of an earlier call. storage's
-- TestVersionedColumnsAreTheDescriptors fails when a counted table's
-- trigger does not compare exactly account_id and its descriptor's filter
-- and search columns.
CREATE FUNCTION version_table(t regclass, columns text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    name text;
    olds text;
    news text;
BEGIN
    SELECT c.relname INTO STRICT name FROM pg_class c WHERE c.oid = t;
    SELECT string_agg(format('OLD.%I', col), ', ' ORDER BY ord), string_agg(format('NEW.%I', col), ', ' ORDER BY ord)
    INTO olds, news
    FROM unnest(array_prepend('account_id', columns)) WITH ORDINALITY AS u (col, ord);
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', name || '_count_version', t);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s FOR EACH ROW WHEN (ROW(%s) IS DISTINCT FROM ROW(%s))
        EXECUTE FUNCTION count_changes()', name || '_count_version', t, olds, news);
END
$$;

SELECT version_table('services', ARRAY['imei', 'name', 'odo', 'odo_interval', 'odo_last', 'engh', 'engh_interval',
    'engh_last', 'days', 'days_interval', 'days_last', 'odo_left', 'odo_left_num', 'engh_left', 'engh_left_num',
    'days_left', 'days_left_num', 'update_last', 'notify_service_expire']);
SELECT version_table('objects', ARRAY['imei', 'name']);
SELECT version_table('reports', ARRAY['name', 'type', 'format', 'show_addresses', 'zones_addresses', 'show_trip_image',
    'stop_duration', 'speed_limit', 'imei', 'zone_ids', 'sensor_names', 'data_items', 'schedule_period',
    'schedule_email_address', 'dt_schedule_d', 'dt_schedule_w']);
SELECT version_table('events', ARRAY['type', 'name', 'active', 'week_days', 'day_time', 'imei', 'checked_value',
    'route_trigger', 'zone_trigger', 'routes', 'zones', 'notify_system', 'notify_email', 'notify_email_address',
    'notify_sms', 'notify_sms_number', 'notify_telegram', 'email_template_id', 'sms_template_id', 'cmd_send',
    'cmd_gateway', 'cmd_type', 'cmd_string']);
SELECT version_table('passengers', ARRAY[]::text[]);

-- count_generation_bump() adds 1 to the generation, once per statement
-- that deleted or re-keyed counter rows or changed the accounts tree.
CREATE FUNCTION count_generation_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE count_generation SET generation = generation + 1;
    RETURN NULL;
END
$$;

CREATE FUNCTION count_generation_bump_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM old_rows) THEN
        UPDATE count_generation SET generation = generation + 1;
    END IF;
    RETURN NULL;
END
$$;

-- counter rows deleted (erase, count_rows on TRUNCATE, uncount_table,
-- ResumeRowCounting) or emptied; re-keyed (no code does: a guard)
CREATE TRIGGER account_row_counts_generation_delete AFTER DELETE ON account_row_counts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_generation_bump_deleted();
CREATE TRIGGER account_row_counts_generation_truncate AFTER TRUNCATE ON account_row_counts
    FOR EACH STATEMENT EXECUTE FUNCTION count_generation_bump();
CREATE TRIGGER account_row_counts_generation_rekey AFTER UPDATE OF resource, account_id, slot ON account_row_counts
    FOR EACH STATEMENT EXECUTE FUNCTION count_generation_bump();
-- the accounts a scope resolves (manager_id = m, id = a): an account moved
-- or re-numbered, deleted, or every account truncated
CREATE TRIGGER accounts_count_generation_update AFTER UPDATE ON accounts FOR EACH ROW
    WHEN (OLD.manager_id IS DISTINCT FROM NEW.manager_id OR OLD.id <> NEW.id)
    EXECUTE FUNCTION count_generation_bump();
CREATE TRIGGER accounts_count_generation_delete AFTER DELETE ON accounts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_generation_bump_deleted();
CREATE TRIGGER accounts_count_generation_truncate AFTER TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION count_generation_bump();
