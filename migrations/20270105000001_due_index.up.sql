-- The due list from an index (issue 24 item 1; the definition of due is
-- docs/design.md §5, "Due record", unchanged).
--
-- A criterion of a service is due when its remaining is zero or less, or
-- within its *_left_num threshold with *_left on: remaining =
-- interval − (current − last) ≤ (left ? left_num : 0), that is current ≥
-- last + interval − (left ? left_num : 0). That bound depends on the
-- service row alone, so it is stored (generated columns):
--
--   odo_due_at, engh_due_at  the odometer (km) / engine hours (h) from which
--                            the criterion is due; NULL when it is off.
--
-- The current readings live on the object, so whether a meter criterion is
-- due is kept per service, maintained on writes (meter_due): a service's
-- insert or change of a meter column reads its object's readings (FOR SHARE,
-- so that a concurrent reading update waits or is waited for), and an
-- object's reading update flips the services of the device whose state
-- changes (most updates flip none and write nothing but the object).
--
-- The days criterion depends on today, which no write marks: its bound is
-- stored as a day number (days since 2000-01-01, bigint: an interval of
-- 2^31 days must not overflow a date). due_from combines both: the first
-- day on which the service is due as far as the rows know now (the lowest
-- bigint when a meter criterion is due; the days bound; NULL when nothing
-- but a new reading or a change of the row can make it due). A service is
-- due on day D exactly when due_from <= D, which two partial indexes answer:
-- per account (a user's or a small tree's accounts, one range each) and by
-- service id (the newest first for the admin and large trees).
--
-- The file is one statement batch, so it applies in one transaction, with
-- both tables locked against writes while the state is backfilled. On a
-- large database it takes longer than the server's per-read timeout, and a
-- client that gave up may leave it committed but unrecorded: every
-- statement is written so that running the file again changes nothing
-- (fleetapi migrate waits for it; docs/operations.md).
LOCK TABLE services, objects IN SHARE ROW EXCLUSIVE MODE;

-- service_due_at is the reading (or day number) from which one criterion
-- is due: last + interval − (soon ? soon_num : 0), NULL when the criterion
-- is off or its last value unknown.
CREATE OR REPLACE FUNCTION service_due_at(enabled boolean, last bigint, every bigint, soon boolean, soon_num bigint)
    RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN enabled THEN last + every - CASE WHEN soon THEN soon_num ELSE 0 END END;

ALTER TABLE services
    ADD COLUMN IF NOT EXISTS odo_due_at bigint GENERATED ALWAYS AS
        (service_due_at(odo, odo_last, odo_interval, odo_left, odo_left_num)) STORED,
    ADD COLUMN IF NOT EXISTS engh_due_at bigint GENERATED ALWAYS AS
        (service_due_at(engh, engh_last, engh_interval, engh_left, engh_left_num)) STORED,
    ADD COLUMN IF NOT EXISTS meter_due boolean NOT NULL DEFAULT false,
    -- An infinite days_last has no day number: its days criterion is never
    -- due (the remaining days of such a row cannot be computed either).
    ADD COLUMN IF NOT EXISTS due_from bigint GENERATED ALWAYS AS (CASE WHEN meter_due THEN -9223372036854775807
        ELSE service_due_at(days AND isfinite(days_last),
            CASE WHEN isfinite(days_last) THEN days_last - DATE '2000-01-01' END,
            days_interval, days_left, days_left_num) END) STORED;

UPDATE services s SET meter_due = true FROM objects o
WHERE o.imei = s.imei AND NOT s.meter_due AND (o.odometer >= s.odo_due_at OR o.engine_hours >= s.engh_due_at);

-- services_meter_due computes meter_due of a service row being written from
-- its object's current readings. The object's row is read FOR SHARE: a
-- concurrent update of the readings either commits first (and this write
-- reads the new readings) or waits for this write (and its trigger then
-- sees this row).
CREATE OR REPLACE FUNCTION services_meter_due() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    odometer bigint;
    hours    bigint;
BEGIN
    SELECT o.odometer, o.engine_hours INTO odometer, hours FROM objects o WHERE o.imei = NEW.imei FOR SHARE;
    NEW.meter_due := coalesce(odometer >= service_due_at(NEW.odo, NEW.odo_last, NEW.odo_interval, NEW.odo_left, NEW.odo_left_num), false)
        OR coalesce(hours >= service_due_at(NEW.engh, NEW.engh_last, NEW.engh_interval, NEW.engh_left, NEW.engh_left_num), false);
    RETURN NEW;
END
$$;

-- Fires on inserts (COPY included) and on changes of what meter_due depends
-- on; setting meter_due itself recomputes it, so no write can store a wrong
-- value.
CREATE OR REPLACE TRIGGER services_meter_due BEFORE INSERT OR UPDATE OF imei, odo, odo_interval, odo_last, odo_left, odo_left_num,
    engh, engh_interval, engh_last, engh_left, engh_left_num, meter_due ON services
    FOR EACH ROW EXECUTE FUNCTION services_meter_due();

-- objects_meter_due flips meter_due of the device's services whose state the
-- new readings change (services_meter_due recomputes each: the value is the
-- same).
CREATE OR REPLACE FUNCTION objects_meter_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE services s SET meter_due = NOT s.meter_due
    WHERE s.imei = NEW.imei
      AND s.meter_due <> (coalesce(NEW.odometer >= s.odo_due_at, false) OR coalesce(NEW.engine_hours >= s.engh_due_at, false));
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER objects_meter_due AFTER UPDATE OF odometer, engine_hours ON objects FOR EACH ROW
    WHEN (OLD.odometer IS DISTINCT FROM NEW.odometer OR OLD.engine_hours IS DISTINCT FROM NEW.engine_hours)
    EXECUTE FUNCTION objects_meter_due();

-- Per account: a user's due services are one range; a manager's tree one
-- range per account.
CREATE INDEX IF NOT EXISTS services_due_account_idx ON services (account_id, due_from, service_id) WHERE due_from IS NOT NULL;
-- Newest first: the admin, and a large tree, walk it backwards until the
-- page is full, reading neither the services' heap nor the objects.
CREATE INDEX IF NOT EXISTS services_due_id_idx ON services (service_id) INCLUDE (account_id, due_from) WHERE due_from IS NOT NULL;
