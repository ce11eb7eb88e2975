-- admin (account 7, manager 3), events
-- scope: {"Resource":"events","Unrestricted":true,"None":false,"Where":null}
SELECT "e"."event_id" FROM "events" AS "e" WHERE (TRUE)
