-- Exact totals without scanning (docs/performance.md, "Exact totals").
--
-- Triggers keep, per tenant table, how many rows each account owns
-- (account_row_counts). An unfiltered list's total is then the sum of the
-- counters of the accounts the caller's row scope admits: storage renders
-- the same compiled scope against this table (account_id, and the virtual
-- manager_id resolved through accounts at read time, so a change of the
-- account tree needs no counter change). Scopes through device grants
-- (granted_to, the subaccounts') are not counted per device: a device key
-- is almost a row of its own (services: 5 rows per device key, reports and
-- events: one list per row), so per-device counters cost a COPY ten times
-- what per-account ones do and save a subaccount's count over one
-- account's rows little (docs/decisions.md); those lists count rows.
--
-- Writes never wait for one another on a counter: each account has up to
-- 16 stripes (slot = the writing backend's pid modulo 16) and a reader
-- sums them; concurrent creates in one account, each on its own
-- connection, update different rows. Counters are maintained by
-- statement-level triggers with transition tables: one aggregated upsert
-- per statement, whether it writes one row (a create) or a COPY chunk
-- (generate). INSERT, UPDATE (an update that moves no row to another
-- account writes nothing), DELETE and TRUNCATE are covered, and COPY fires
-- the INSERT triggers. The file is one statement batch, so it applies in
-- one transaction: the tables are locked against writes while the
-- triggers are created and the counters backfilled.
LOCK TABLE services, reports, events, passengers, objects IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE account_row_counts (
    resource   text     NOT NULL,
    account_id bigint   NOT NULL,
    slot       smallint NOT NULL CHECK (slot BETWEEN 0 AND 15),
    n          bigint   NOT NULL,
    PRIMARY KEY (resource, account_id, slot)
);

-- count_rows() is the trigger of every counted table. Accounts are
-- upserted in id order, so two statements that share a stripe lock their
-- rows in the same order.
CREATE FUNCTION count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER services_count_insert AFTER INSERT ON services REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER services_count_update AFTER UPDATE ON services REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER services_count_delete AFTER DELETE ON services REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER services_count_truncate AFTER TRUNCATE ON services
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();

CREATE TRIGGER reports_count_insert AFTER INSERT ON reports REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER reports_count_update AFTER UPDATE ON reports REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER reports_count_delete AFTER DELETE ON reports REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER reports_count_truncate AFTER TRUNCATE ON reports
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();

CREATE TRIGGER events_count_insert AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER events_count_update AFTER UPDATE ON events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER events_count_delete AFTER DELETE ON events REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER events_count_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();

CREATE TRIGGER objects_count_insert AFTER INSERT ON objects REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER objects_count_update AFTER UPDATE ON objects REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER objects_count_delete AFTER DELETE ON objects REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER objects_count_truncate AFTER TRUNCATE ON objects
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();

CREATE TRIGGER passengers_count_insert AFTER INSERT ON passengers REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER passengers_count_update AFTER UPDATE ON passengers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER passengers_count_delete AFTER DELETE ON passengers REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();
CREATE TRIGGER passengers_count_truncate AFTER TRUNCATE ON passengers
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows();

-- The backfill: the rows that exist now, in stripe 0.
INSERT INTO account_row_counts (resource, account_id, slot, n)
SELECT 'services', account_id, 0, count(*) FROM services GROUP BY account_id
UNION ALL SELECT 'reports', account_id, 0, count(*) FROM reports GROUP BY account_id
UNION ALL SELECT 'events', account_id, 0, count(*) FROM events GROUP BY account_id
UNION ALL SELECT 'objects', account_id, 0, count(*) FROM objects GROUP BY account_id
UNION ALL SELECT 'passengers', account_id, 0, count(*) FROM passengers GROUP BY account_id;


-- Filtered totals as cheap as the indexes allow (docs/performance.md,
-- "Exact totals"): a filter on a service's name counts from an index alone
-- (an equality on the trigram index read 18,453 heap pages for the admin's
-- 78,270 "Annual inspection"; this index 133 index pages), and the
-- per-account index carries the boolean filter columns, so that a
-- manager's count with a boolean filter is an index-only scan of its
-- accounts instead of a sequential scan of the table. The per-account index
-- keeps its name and key (account_id, service_id) for the list path.
CREATE INDEX services_name_account_id_idx ON services (name, account_id);
DROP INDEX services_account_id_idx;
CREATE INDEX services_account_id_idx ON services (account_id, service_id)
    INCLUDE (odo, engh, days, odo_left, engh_left, days_left, update_last, notify_service_expire);
