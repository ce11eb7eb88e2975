-- Kept ids (docs/decisions.md, "Kept ids: pages read by key";
-- storage/totals.go): the kept total of a list may hold the ids of its
-- rows, and its pages are then read by key while the version of the
-- scope's rows holds. An update of a row's id changes those ids without
-- changing a filtered or searched column, so the version trigger of every
-- counted table compares the id column too (version_table, migration
-- 20270110000001). No code of the service updates an id; a manual fix or a
-- tool may. storage's TestVersionedColumnsAreTheDescriptors holds the
-- compared columns to account_id, the id and the descriptor's filter and
-- search columns.
SELECT version_table('services', ARRAY['service_id', 'imei', 'name', 'odo', 'odo_interval', 'odo_last', 'engh',
    'engh_interval', 'engh_last', 'days', 'days_interval', 'days_last', 'odo_left', 'odo_left_num', 'engh_left',
    'engh_left_num', 'days_left', 'days_left_num', 'update_last', 'notify_service_expire']);
SELECT version_table('objects', ARRAY['id', 'imei', 'name']);
SELECT version_table('reports', ARRAY['report_id', 'name', 'type', 'format', 'show_addresses', 'zones_addresses',
    'show_trip_image', 'stop_duration', 'speed_limit', 'imei', 'zone_ids', 'sensor_names', 'data_items',
    'schedule_period', 'schedule_email_address', 'dt_schedule_d', 'dt_schedule_w']);
SELECT version_table('events', ARRAY['event_id', 'type', 'name', 'active', 'week_days', 'day_time', 'imei',
    'checked_value', 'route_trigger', 'zone_trigger', 'routes', 'zones', 'notify_system', 'notify_email',
    'notify_email_address', 'notify_sms', 'notify_sms_number', 'notify_telegram', 'email_template_id',
    'sms_template_id', 'cmd_send', 'cmd_gateway', 'cmd_type', 'cmd_string']);
SELECT version_table('passengers', ARRAY['passenger_id']);
