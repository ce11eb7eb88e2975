-- Reverts 20270112000001_version_ids.up.sql: the version triggers compare
-- account_id and the filtered and searched columns only, as migration
-- 20270110000001 installed them.
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
