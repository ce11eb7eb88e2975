-- Back to 20270501000001_zones's list of audit actions (base, webhook.*,
-- zone.*).
DELETE FROM audit_events WHERE action IN ('event.create', 'event.update', 'event.delete', 'service.create', 'service.update',
    'service.delete', 'service.done', 'report.create', 'report.update', 'report.delete');
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'account.erase', 'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke',
    'webhook.create', 'webhook.update', 'webhook.delete', 'webhook.rotate', 'webhook.test', 'webhook.retry',
    'zone.create', 'zone.update', 'zone.delete'));

ALTER TABLE accounts DROP COLUMN quota_events;
