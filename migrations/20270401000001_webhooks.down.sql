DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
ALTER TABLE usage_daily DROP COLUMN deliveries_attempted;
ALTER TABLE accounts DROP COLUMN quota_webhooks;
