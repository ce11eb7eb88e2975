-- notification_streams: one row per open GET /notifications/stream, on
-- any replica, with a lease the stream renews every second (docs/design.md
-- §14: at most FLEET_STREAMS_PER_ACCOUNT open streams per account). A
-- replica that dies leaves rows whose lease ends; the next open of the
-- account forgets them (storage.OpenStreamSlot, under an advisory lock of
-- the account's streams).
CREATE TABLE notification_streams (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    opened_at   timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz NOT NULL
);
CREATE INDEX notification_streams_account_id_idx ON notification_streams (account_id);

--bun:split

-- GET /notifications filters on event_id: a filter value the column could
-- never hold is refused by the API, which reads the bound from this CHECK
-- (storage TestListingKindsMatchColumns).
ALTER TABLE notifications ADD CONSTRAINT notifications_event_id_check CHECK (event_id >= 0);
