-- Reverts 20270105000001_due_index.up.sql: the due list walks the services
-- again.
DROP TRIGGER IF EXISTS objects_meter_due ON objects;
DROP FUNCTION IF EXISTS objects_meter_due();
DROP TRIGGER IF EXISTS services_meter_due ON services;
DROP FUNCTION IF EXISTS services_meter_due();
DROP INDEX IF EXISTS services_due_account_idx;
DROP INDEX IF EXISTS services_due_id_idx;
ALTER TABLE services DROP COLUMN IF EXISTS due_from, DROP COLUMN IF EXISTS meter_due,
    DROP COLUMN IF EXISTS engh_due_at, DROP COLUMN IF EXISTS odo_due_at;
DROP FUNCTION IF EXISTS service_due_at(boolean, bigint, bigint, boolean, bigint);
