DROP TABLE IF EXISTS usage_daily;
