DELETE FROM audit_events WHERE action IN ('event.create', 'event.update', 'event.delete', 'service.create', 'service.update',
    'service.delete', 'service.done', 'report.create', 'report.update', 'report.delete');
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'account.erase', 'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke'));

ALTER TABLE accounts DROP COLUMN quota_events;
