-- Counting a table is one call (docs/architecture.md, "Counters").
--
-- count_table(t) makes t a counted table: it installs the four
-- statement-level triggers of migration 20261210000002_row_counters on t
-- (<table>_count_insert, _update, _delete, _truncate, each running
-- count_rows()) and recounts t's rows per account into
-- account_row_counts, in stripe 0 (the backfill). It is idempotent: on a
-- table that is counted already it replaces the triggers and recounts, so
-- it also repairs counters. The table is locked against writes until the
-- calling transaction ends, so no write falls between the recount and the
-- triggers.
--
-- uncount_table(t) undoes it: the triggers and t's counters go.
--
-- A resource is counted when its descriptor is declared with the option
-- counted (storage/descriptor.go) and its migration calls
-- SELECT count_table('<table>') (its down file SELECT uncount_table(...)
-- unless it drops the table: the down of 20261210000002 drops count_rows(),
-- which no trigger may still use). TestCountedTablesAreTheDeclared fails
-- when the tables carrying counting triggers and the counted descriptors
-- differ. The five tables counted by 20261210000002 keep the triggers it
-- made, which are the ones count_table makes (the same test compares them).
CREATE FUNCTION uncount_table(t regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    name text;
    op text;
BEGIN
    SELECT c.relname INTO STRICT name FROM pg_class c WHERE c.oid = t;
    FOREACH op IN ARRAY ARRAY['insert', 'update', 'delete', 'truncate'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', name || '_count_' || op, t);
    END LOOP;
    DELETE FROM account_row_counts WHERE resource = name;
END
$$;

CREATE FUNCTION count_table(t regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    name text;
BEGIN
    SELECT c.relname INTO STRICT name FROM pg_class c WHERE c.oid = t;
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', t);
    PERFORM uncount_table(t);
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION count_rows()', name || '_count_insert', t);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION count_rows()', name || '_count_update', t);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION count_rows()', name || '_count_delete', t);
    EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %s
        FOR EACH STATEMENT EXECUTE FUNCTION count_rows()', name || '_count_truncate', t);
    EXECUTE format('INSERT INTO account_row_counts (resource, account_id, slot, n)
        SELECT %L, account_id, 0, count(*) FROM %s GROUP BY account_id', name, t);
END
$$;
