DELETE FROM audit_events WHERE action LIKE 'zone.%';
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'account.erase', 'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke',
    'webhook.create', 'webhook.update', 'webhook.delete', 'webhook.rotate', 'webhook.test', 'webhook.retry'));
DROP TABLE zones;
ALTER TABLE accounts DROP COLUMN quota_zones;
