CREATE OR REPLACE FUNCTION fleet_auth_notify_token() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR (to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at') THEN
        PERFORM pg_notify('fleet_auth', 'token:' || OLD.id);
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE OR REPLACE FUNCTION fleet_auth_notify_account() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' OR to_jsonb(OLD) IS DISTINCT FROM to_jsonb(NEW) THEN
        PERFORM pg_notify('fleet_auth', 'account:' || OLD.id);
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE OR REPLACE FUNCTION fleet_auth_notify_all() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fleet_auth', 'all');
    RETURN NULL;
END
$$;

--bun:split

DROP TABLE IF EXISTS fleet_auth_replicas;

--bun:split

DROP SEQUENCE IF EXISTS fleet_auth_seq;
