-- Writes of event rules, service records and reports (docs/design.md §15,
-- issue 38): quotas (§12) gain event rules per account, and the audit
-- trail records each write of the three resources.

-- NULL: the platform default (FLEET_QUOTA_EVENTS).
ALTER TABLE accounts ADD COLUMN quota_events bigint CHECK (quota_events >= 0);

ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'account.erase', 'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke',
    'event.create', 'event.update', 'event.delete', 'service.create', 'service.update', 'service.delete', 'service.done',
    'report.create', 'report.update', 'report.delete'));
