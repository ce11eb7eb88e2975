ALTER TABLE notifications DROP CONSTRAINT notifications_event_id_check;

--bun:split

DROP TABLE notification_streams;
