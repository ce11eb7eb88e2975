DROP TABLE IF EXISTS fleet_leases;
DROP TABLE IF EXISTS service_states;
DROP TABLE IF EXISTS notifications;
DROP FUNCTION IF EXISTS notifications_wake();
DROP FUNCTION IF EXISTS drop_positions_partitions(date);
DROP FUNCTION IF EXISTS ensure_positions_partitions(date, date);
DROP TABLE IF EXISTS positions;
ALTER TABLE objects DROP COLUMN IF EXISTS last_time, DROP COLUMN IF EXISTS lat, DROP COLUMN IF EXISTS lon,
    DROP COLUMN IF EXISTS speed, DROP COLUMN IF EXISTS heading, DROP COLUMN IF EXISTS altitude,
    DROP COLUMN IF EXISTS ignition, DROP COLUMN IF EXISTS attributes, DROP COLUMN IF EXISTS rule_state;
ALTER TABLE accounts DROP COLUMN IF EXISTS timezone;
