ALTER TABLE accounts DROP COLUMN rate_limit;
