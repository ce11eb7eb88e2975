-- Usage metering for billing (docs/design.md §12, issue 21 item 3): per account,
-- UTC day and route template ("GET /services/{id}"), what the API served.
-- The servers aggregate in memory and add their counts here on an interval
-- and at shutdown with one additive upsert (ON CONFLICT ... SET x = x +
-- EXCLUDED.x), so replicas add up. The account is the authenticated
-- token's; unauthenticated requests (401) are attributed to nobody.
-- Deleting an account deletes its usage (ON DELETE CASCADE).
CREATE TABLE usage_daily (
    account_id    bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day           date NOT NULL,
    route         text NOT NULL CHECK (route <> '' AND length(route) <= 200),
    requests      bigint NOT NULL DEFAULT 0 CHECK (requests >= 0),
    rows_returned bigint NOT NULL DEFAULT 0 CHECK (rows_returned >= 0),
    writes        bigint NOT NULL DEFAULT 0 CHECK (writes >= 0),
    errors_4xx    bigint NOT NULL DEFAULT 0 CHECK (errors_4xx >= 0),
    errors_5xx    bigint NOT NULL DEFAULT 0 CHECK (errors_5xx >= 0),
    bytes_out     bigint NOT NULL DEFAULT 0 CHECK (bytes_out >= 0),
    PRIMARY KEY (account_id, day, route)
);

-- The operator's export reads a range of days across every account.
CREATE INDEX usage_daily_day_idx ON usage_daily (day);
