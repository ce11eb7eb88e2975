-- An erase leaves nothing, usage outlives it, tokens and idempotency keys
-- are purged (issue 34, items 4, 5 and 10; issue 39, item 2).
--
-- A stored response names the row it created (subject, subject_id: the
-- table and the id of an account, a device, a token or a passenger), so
-- that an erase deletes the responses that name an erased row whoever
-- made the request, and a token purge those of the purged tokens. Rows
-- written before this migration get theirs from the response's shape.
ALTER TABLE idempotency_keys ADD COLUMN subject text, ADD COLUMN subject_id bigint,
    ADD CONSTRAINT idempotency_keys_subject_check CHECK ((subject IS NULL) = (subject_id IS NULL));
UPDATE idempotency_keys SET (subject, subject_id) = (
    CASE WHEN response ? 'passenger_id' THEN 'passengers' WHEN response ? 'username' THEN 'accounts'
         WHEN response ? 'permissions' THEN 'tokens' WHEN response ? 'imei' THEN 'objects' END,
    CASE WHEN response ? 'passenger_id' THEN (response->>'passenger_id')::bigint
         WHEN response ? 'username' OR response ? 'permissions' OR response ? 'imei' THEN (response->>'id')::bigint END)
WHERE status = 201;
CREATE INDEX idempotency_keys_subject_idx ON idempotency_keys (subject, subject_id) WHERE subject IS NOT NULL;
-- The purge of expired keys (storage.Store.Purge) reads them by age.
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

--bun:split

-- Usage is billing data: it outlives the accounts it was counted for (no
-- foreign key: an erase keeps it, as it keeps the audit trail). Each row
-- records, when counted, the accounts above its account (ancestors,
-- nearest first: the ids only, no personal data), by which GET /usage
-- shows an erased account's rows to the accounts that were above it, and
-- the account billed for it (billed_account_id: the top of its tree below
-- the operator's admins; NULL, for a row a server of an earlier version
-- added during an upgrade, means the account itself).
ALTER TABLE usage_daily DROP CONSTRAINT usage_daily_account_id_fkey,
    ADD COLUMN ancestors bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN billed_account_id bigint;
WITH RECURSIVE up AS (
    SELECT a.id AS account_id, a.manager_id AS above, ARRAY[]::bigint[] AS ancestors, a.id AS billed, a.type <> 'admin' AS open
    FROM accounts a
    UNION ALL
    SELECT up.account_id, m.manager_id, up.ancestors || m.id,
        CASE WHEN up.open AND m.type <> 'admin' THEN m.id ELSE up.billed END, up.open AND m.type <> 'admin'
    FROM up JOIN accounts m ON m.id = up.above
    WHERE cardinality(up.ancestors) < 8
)
UPDATE usage_daily u SET ancestors = up.ancestors, billed_account_id = up.billed
FROM up WHERE up.account_id = u.account_id AND up.above IS NULL;

--bun:split

-- The IMEIs an audit event's changes name (under "imei": a device's, or a
-- subaccount's granted devices, before and after), for the erase to find
-- every event naming an erased device, whichever account it targets.
CREATE FUNCTION fleet_audit_imeis(changes jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY(SELECT jsonb_path_query(changes, 'lax $.imei.*[*] ? (@.type() == "string")') #>> '{}');

--bun:split

CREATE INDEX audit_events_imeis_idx ON audit_events USING gin (fleet_audit_imeis(changes));

--bun:split

-- The purge of dead tokens (storage.Store.Purge) reads them by the time
-- they stopped working: revoked or expired, whichever came first.
CREATE INDEX tokens_dead_at_idx ON tokens (LEAST(revoked_at, expires_at));
