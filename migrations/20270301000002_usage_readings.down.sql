ALTER TABLE usage_daily DROP COLUMN readings_accepted, DROP COLUMN notifications_created;
