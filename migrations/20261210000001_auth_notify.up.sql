-- Invalidation of the authentication cache (issue 13): every change to
-- what an authenticated principal is made of sends a notification on the
-- channel fleet_auth, delivered to every replica's listener when the
-- transaction commits (and only then; a rolled-back change sends nothing).
-- Payloads: 'token:<id>' (the token changed or was deleted),
-- 'account:<id>' (the account changed or was deleted: every principal
-- whose account or ancestor it is), 'all' (a table was truncated). The
-- cache keeps no negative answers, so inserts need no notification.
CREATE FUNCTION fleet_auth_notify_token() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- last_used_at is written by authentication itself (at most once a
    -- minute per token) and is not a fact any decision reads.
    IF TG_OP = 'DELETE' OR (to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at') THEN
        PERFORM pg_notify('fleet_auth', 'token:' || OLD.id);
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE FUNCTION fleet_auth_notify_account() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Every column: state, expiry, read-only, privileges, manager_id,
    -- and the names /me shows. Accounts change rarely.
    IF TG_OP = 'DELETE' OR to_jsonb(OLD) IS DISTINCT FROM to_jsonb(NEW) THEN
        PERFORM pg_notify('fleet_auth', 'account:' || OLD.id);
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE FUNCTION fleet_auth_notify_all() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fleet_auth', 'all');
    RETURN NULL;
END
$$;

--bun:split

CREATE TRIGGER tokens_auth_notify AFTER UPDATE OR DELETE ON tokens
    FOR EACH ROW EXECUTE FUNCTION fleet_auth_notify_token();
CREATE TRIGGER tokens_auth_notify_truncate AFTER TRUNCATE ON tokens
    FOR EACH STATEMENT EXECUTE FUNCTION fleet_auth_notify_all();
CREATE TRIGGER accounts_auth_notify AFTER UPDATE OR DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION fleet_auth_notify_account();
CREATE TRIGGER accounts_auth_notify_truncate AFTER TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION fleet_auth_notify_all();
