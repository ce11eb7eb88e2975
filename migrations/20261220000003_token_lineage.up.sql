-- Token lineage (docs/design.md §9, issue 19 items 7 and 9): a token minted
-- through POST /tokens records the token that minted it. Tokens made by
-- the command line or the import have none. A minting token deleted with
-- its account leaves its heirs without a parent.
ALTER TABLE tokens ADD COLUMN parent_token_id bigint REFERENCES tokens (id) ON DELETE SET NULL
    CHECK (parent_token_id <> id);
CREATE INDEX tokens_parent_token_id_idx ON tokens (parent_token_id) WHERE parent_token_id IS NOT NULL;

--bun:split

-- Revoking a token revokes every token minted from it, transitively, in
-- the same transaction and with the same revocation time, whoever revokes
-- it (the API, the command line, SQL by hand): a stolen token leaves no
-- heirs. Each heir's own update fires this trigger for its heirs; a token
-- already revoked is left as it is (its heirs were revoked with it).
CREATE FUNCTION fleet_token_revoke_heirs() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tokens SET revoked_at = NEW.revoked_at
    WHERE parent_token_id = NEW.id AND revoked_at IS NULL;
    RETURN NULL;
END
$$;

--bun:split

CREATE TRIGGER tokens_revoke_heirs AFTER UPDATE OF revoked_at ON tokens
    FOR EACH ROW WHEN (NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL)
    EXECUTE FUNCTION fleet_token_revoke_heirs();

--bun:split

-- A token cannot be minted from a revoked token: the parent row is read
-- FOR SHARE, which waits for a revocation in flight, so that a token
-- minted while its parent is being revoked is refused rather than left
-- behind.
CREATE FUNCTION fleet_token_parent_live() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    parent_revoked timestamptz;
BEGIN
    IF NEW.parent_token_id IS NOT NULL THEN
        SELECT revoked_at INTO parent_revoked FROM tokens WHERE id = NEW.parent_token_id FOR SHARE;
        IF parent_revoked IS NOT NULL THEN
            RAISE EXCEPTION 'token % cannot be minted from token %: it is revoked', NEW.name, NEW.parent_token_id
                USING ERRCODE = 'check_violation', COLUMN = 'parent_token_id';
        END IF;
    END IF;
    RETURN NEW;
END
$$;

--bun:split

CREATE TRIGGER tokens_parent_live BEFORE INSERT OR UPDATE OF parent_token_id ON tokens
    FOR EACH ROW EXECUTE FUNCTION fleet_token_parent_live();
