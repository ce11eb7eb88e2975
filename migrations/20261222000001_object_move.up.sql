-- object.move (issue 19 item 15): an IMEI is one physical device, unique on
-- the platform; a device changes hands through PATCH /objects/{id}, and the
-- audit trail records it as object.move.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke'));

--bun:split

-- A device's maintenance services belong to the account that owns it (the
-- foreign key below): when the device moves, they follow it.
ALTER TABLE services DROP CONSTRAINT services_imei_account_id_fkey;
ALTER TABLE services ADD CONSTRAINT services_imei_account_id_fkey FOREIGN KEY (imei, account_id)
    REFERENCES objects (imei, account_id) ON UPDATE CASCADE;
