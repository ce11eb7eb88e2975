DELETE FROM audit_events WHERE action LIKE 'webhook.%';
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'account.erase', 'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke'));
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
ALTER TABLE usage_daily DROP COLUMN deliveries_attempted;
ALTER TABLE accounts DROP COLUMN quota_webhooks;
