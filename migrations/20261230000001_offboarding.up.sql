-- Offboarding (docs/design.md §12, issue 21 item 4): a tenant's subtree is exported
-- in the import format and erased in one transaction.
--
-- The audit trail records an erase as account.erase (one event with the
-- counts of what went).
ALTER TABLE audit_events DROP CONSTRAINT audit_events_action_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_action_check CHECK (action IN ('account.create', 'account.update',
    'account.erase', 'grants.replace', 'object.create', 'object.move', 'token.create', 'token.revoke'));

--bun:split

-- An exported tenant is imported with its token lineage: a revoked token
-- minted from a revoked token is a row the import must be able to write
-- again. The rule of 20261220000003 stays for every token that can work:
-- a token that is not revoked cannot be minted from a revoked one.
CREATE OR REPLACE FUNCTION fleet_token_parent_live() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    parent_revoked timestamptz;
BEGIN
    IF NEW.parent_token_id IS NOT NULL AND NEW.revoked_at IS NULL THEN
        SELECT revoked_at INTO parent_revoked FROM tokens WHERE id = NEW.parent_token_id FOR SHARE;
        IF parent_revoked IS NOT NULL THEN
            RAISE EXCEPTION 'token % cannot be minted from token %: it is revoked', NEW.name, NEW.parent_token_id
                USING ERRCODE = 'check_violation', COLUMN = 'parent_token_id';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
