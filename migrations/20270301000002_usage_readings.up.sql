-- Usage metering of live data (docs/design.md §12, §14): the readings a
-- request had accepted and the notifications it created, per account (the
-- caller of POST /readings), day and route, beside the request counts.
ALTER TABLE usage_daily
    ADD COLUMN readings_accepted     bigint NOT NULL DEFAULT 0 CHECK (readings_accepted >= 0),
    ADD COLUMN notifications_created bigint NOT NULL DEFAULT 0 CHECK (notifications_created >= 0);
