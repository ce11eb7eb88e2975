DROP TRIGGER IF EXISTS tokens_parent_live ON tokens;

--bun:split

DROP FUNCTION IF EXISTS fleet_token_parent_live();

--bun:split

DROP TRIGGER IF EXISTS tokens_revoke_heirs ON tokens;

--bun:split

DROP FUNCTION IF EXISTS fleet_token_revoke_heirs();

--bun:split

DROP INDEX IF EXISTS tokens_parent_token_id_idx;
ALTER TABLE tokens DROP COLUMN IF EXISTS parent_token_id;
