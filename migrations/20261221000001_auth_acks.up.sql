-- Acknowledged invalidation of the authentication cache (issue 19 item 6).
-- Each replica's listener holds a lease in fleet_auth_replicas, renewed by
-- every ping it sends itself (in the ping's own statement, so the lease is
-- durable before the ping can extend the replica's trust in its cache),
-- and records in acked_seq the highest change sequence it has applied.
-- A writer that changed a principal through the API or the CLI takes a
-- sequence number, announces it ('ack:<seq>' on fleet_auth, delivered
-- after the change's own notifications) and answers once every replica
-- with a live lease has acknowledged it, or once the leases of those that
-- have not are over (they have stopped trusting their caches by then).
CREATE SEQUENCE fleet_auth_seq;

--bun:split

CREATE TABLE fleet_auth_replicas (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz NOT NULL,
    acked_seq   bigint NOT NULL DEFAULT 0
);

--bun:split

-- The triggers also mark the transaction (a transaction-local setting),
-- so that storage knows, before it commits, that the write changed a
-- principal and must wait for the acknowledgements: every management
-- write is covered, whatever route or cascade made the change.
CREATE OR REPLACE FUNCTION fleet_auth_notify_token() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- last_used_at is written by authentication itself (at most once a
    -- minute per token) and is not a fact any decision reads.
    IF TG_OP = 'DELETE' OR (to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at') THEN
        PERFORM pg_notify('fleet_auth', 'token:' || OLD.id);
        PERFORM set_config('fleet.auth_changed', 'on', true);
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE OR REPLACE FUNCTION fleet_auth_notify_account() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- Every column: state, expiry, read-only, privileges, manager_id,
    -- and the names /me shows. Accounts change rarely.
    IF TG_OP = 'DELETE' OR to_jsonb(OLD) IS DISTINCT FROM to_jsonb(NEW) THEN
        PERFORM pg_notify('fleet_auth', 'account:' || OLD.id);
        PERFORM set_config('fleet.auth_changed', 'on', true);
    END IF;
    RETURN NULL;
END
$$;

--bun:split

CREATE OR REPLACE FUNCTION fleet_auth_notify_all() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fleet_auth', 'all');
    PERFORM set_config('fleet.auth_changed', 'on', true);
    RETURN NULL;
END
$$;
