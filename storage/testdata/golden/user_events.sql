-- user (account 7, manager 3), events
-- scope: {"Resource":"events","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":7}}
SELECT "e"."event_id" FROM "events" AS "e" WHERE ("e"."account_id" = 7)
