-- Writes of event rules, service records and reports (docs/design.md §15,
-- issue 38): quotas (§12) gain event rules per account, and the audit
-- trail records each write of the three resources. It runs after
-- 20270401000001_webhooks and 20270501000001_zones: its CHECK keeps their
-- actions (webhook.*, zone.*) and adds its own.

-- NULL: the platform default (FLEET_QUOTA_EVENTS).
ALTER TABLE accounts ADD COLUMN quota_events bigint CHECK (quota_events >= 0);

ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'account.erase', 'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke',
    'webhook.create', 'webhook.update', 'webhook.delete', 'webhook.rotate', 'webhook.test', 'webhook.retry',
    'zone.create', 'zone.update', 'zone.delete',
    'event.create', 'event.update', 'event.delete', 'service.create', 'service.update', 'service.delete', 'service.done',
    'report.create', 'report.update', 'report.delete'));
