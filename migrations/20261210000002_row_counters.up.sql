-- Exact totals without scanning (docs/performance.md, "Exact totals").
--
-- Triggers keep, per tenant table, how many rows each account owns
-- (account_row_counts) and how many rows each account owns per device key
-- (device_row_counts: the row's imei as an array, ARRAY[imei] for a scalar
-- imei, the imei list itself for reports and events). An unfiltered list's
-- total is then the sum of the counters of the accounts (or devices) the
-- caller's row scope admits: storage renders the same compiled scope against
-- these tables (account_id, and the virtual manager_id and granted_to
-- resolved through accounts and object_grants at read time), so a change of
-- the account tree or of the grants needs no counter change.
--
-- Writes never wait for one another on a counter: each key has up to 16
-- stripes (slot = the writing backend's pid modulo 16) and a reader sums
-- them; concurrent creates in one account, each on its own connection,
-- update different rows. Counters are maintained by statement-level
-- triggers with transition tables: one aggregated upsert per statement,
-- whether it writes one row (a create) or a COPY chunk of 100,000
-- (generate). INSERT, UPDATE (of account_id or imei; other updates change
-- no key and write nothing), DELETE and TRUNCATE are covered, and COPY fires
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

CREATE TABLE device_row_counts (
    resource   text     NOT NULL,
    account_id bigint   NOT NULL,
    imei       text[]   NOT NULL,
    slot       smallint NOT NULL CHECK (slot BETWEEN 0 AND 15),
    n          bigint   NOT NULL,
    PRIMARY KEY (resource, account_id, imei, slot)
);

-- count_rows() is the trigger of every counted table; TG_ARGV[0] is
-- 'account' (count per account only) or 'device' (also per device key, for
-- tables with an imei column). Keys are upserted in key order, so two
-- statements that share a stripe lock their rows in the same order.
CREATE FUNCTION count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    stripe smallint := pg_backend_pid() % 16;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM account_row_counts WHERE resource = TG_TABLE_NAME;
        DELETE FROM device_row_counts WHERE resource = TG_TABLE_NAME;
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n)
        SELECT TG_TABLE_NAME, r.account_id, stripe, count(*) FROM new_rows r GROUP BY r.account_id ORDER BY r.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        IF TG_ARGV[0] = 'device' THEN
            INSERT INTO device_row_counts AS c (resource, account_id, imei, slot, n)
            SELECT TG_TABLE_NAME, r.account_id, '{}'::text[] || r.imei, stripe, count(*) FROM new_rows r
            GROUP BY 2, 3 ORDER BY 2, 3
            ON CONFLICT (resource, account_id, imei, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n)
        SELECT TG_TABLE_NAME, r.account_id, stripe, -count(*) FROM old_rows r GROUP BY r.account_id ORDER BY r.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        IF TG_ARGV[0] = 'device' THEN
            INSERT INTO device_row_counts AS c (resource, account_id, imei, slot, n)
            SELECT TG_TABLE_NAME, r.account_id, '{}'::text[] || r.imei, stripe, -count(*) FROM old_rows r
            GROUP BY 2, 3 ORDER BY 2, 3
            ON CONFLICT (resource, account_id, imei, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        END IF;
    ELSIF TG_OP = 'UPDATE' THEN
        -- Only keys whose count changed: an update of other columns adds
        -- and removes the same key and writes nothing.
        INSERT INTO account_row_counts AS c (resource, account_id, slot, n)
        SELECT TG_TABLE_NAME, d.account_id, stripe, sum(d.n)
        FROM (SELECT r.account_id, 1 AS n FROM new_rows r UNION ALL SELECT r.account_id, -1 FROM old_rows r) d
        GROUP BY d.account_id HAVING sum(d.n) <> 0 ORDER BY d.account_id
        ON CONFLICT (resource, account_id, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        IF TG_ARGV[0] = 'device' THEN
            INSERT INTO device_row_counts AS c (resource, account_id, imei, slot, n)
            SELECT TG_TABLE_NAME, d.account_id, d.imei, stripe, sum(d.n)
            FROM (SELECT r.account_id, '{}'::text[] || r.imei AS imei, 1 AS n FROM new_rows r
                  UNION ALL SELECT r.account_id, '{}'::text[] || r.imei, -1 FROM old_rows r) d
            GROUP BY d.account_id, d.imei HAVING sum(d.n) <> 0 ORDER BY d.account_id, d.imei
            ON CONFLICT (resource, account_id, imei, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER services_count_insert AFTER INSERT ON services REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER services_count_update AFTER UPDATE ON services REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER services_count_delete AFTER DELETE ON services REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER services_count_truncate AFTER TRUNCATE ON services
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');

CREATE TRIGGER reports_count_insert AFTER INSERT ON reports REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER reports_count_update AFTER UPDATE ON reports REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER reports_count_delete AFTER DELETE ON reports REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER reports_count_truncate AFTER TRUNCATE ON reports
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');

CREATE TRIGGER events_count_insert AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER events_count_update AFTER UPDATE ON events REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER events_count_delete AFTER DELETE ON events REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER events_count_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');

CREATE TRIGGER objects_count_insert AFTER INSERT ON objects REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER objects_count_update AFTER UPDATE ON objects REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER objects_count_delete AFTER DELETE ON objects REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');
CREATE TRIGGER objects_count_truncate AFTER TRUNCATE ON objects
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('device');

CREATE TRIGGER passengers_count_insert AFTER INSERT ON passengers REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('account');
CREATE TRIGGER passengers_count_update AFTER UPDATE ON passengers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('account');
CREATE TRIGGER passengers_count_delete AFTER DELETE ON passengers REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('account');
CREATE TRIGGER passengers_count_truncate AFTER TRUNCATE ON passengers
    FOR EACH STATEMENT EXECUTE FUNCTION count_rows('account');

-- The backfill: the rows that exist now, in stripe 0.
INSERT INTO account_row_counts (resource, account_id, slot, n)
SELECT 'services', account_id, 0, count(*) FROM services GROUP BY account_id
UNION ALL SELECT 'reports', account_id, 0, count(*) FROM reports GROUP BY account_id
UNION ALL SELECT 'events', account_id, 0, count(*) FROM events GROUP BY account_id
UNION ALL SELECT 'objects', account_id, 0, count(*) FROM objects GROUP BY account_id
UNION ALL SELECT 'passengers', account_id, 0, count(*) FROM passengers GROUP BY account_id;

INSERT INTO device_row_counts (resource, account_id, imei, slot, n)
SELECT 'services', account_id, ARRAY[imei], 0, count(*) FROM services GROUP BY account_id, imei
UNION ALL SELECT 'reports', account_id, imei, 0, count(*) FROM reports GROUP BY account_id, imei
UNION ALL SELECT 'events', account_id, imei, 0, count(*) FROM events GROUP BY account_id, imei
UNION ALL SELECT 'objects', account_id, ARRAY[imei], 0, count(*) FROM objects GROUP BY account_id, imei;
