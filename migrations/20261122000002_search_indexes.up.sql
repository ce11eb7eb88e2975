-- Indexes for the list paths of docs/design.md §5.
--
-- Free-text search is a case-insensitive substring match (ILIKE '%x%'):
-- trigram GIN indexes let PostgreSQL answer it without reading every row.
-- The search fields are services name and imei, reports name and type,
-- events name and type. pg_trgm is created by the first migration.
CREATE INDEX services_name_trgm_idx ON services USING gin (name gin_trgm_ops);

--bun:split

CREATE INDEX services_imei_trgm_idx ON services USING gin (imei gin_trgm_ops);

--bun:split

CREATE INDEX reports_name_trgm_idx ON reports USING gin (name gin_trgm_ops);

--bun:split

CREATE INDEX reports_type_trgm_idx ON reports USING gin (type gin_trgm_ops);

--bun:split

CREATE INDEX events_name_trgm_idx ON events USING gin (name gin_trgm_ops);

--bun:split

CREATE INDEX events_type_trgm_idx ON events USING gin (type gin_trgm_ops);

--bun:split

-- The default list path is WHERE account_id = ? ORDER BY <id> LIMIT n.
-- services and passengers have (account_id, <id>) indexes from the first
-- migration; reports and events only UNIQUE (account_id, name), which
-- cannot deliver the id order.
CREATE INDEX reports_account_id_idx ON reports (account_id, report_id);

--bun:split

CREATE INDEX events_account_id_idx ON events (account_id, event_id);
