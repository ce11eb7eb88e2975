DROP TABLE notification_streams;
