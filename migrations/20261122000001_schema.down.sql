DROP TABLE IF EXISTS idempotency_keys, passengers, events, reports, services, tokens, object_grants, objects, accounts;

--bun:split

DROP TYPE IF EXISTS account_type;
