-- subaccount (account 7, manager 3), events
-- scope: {"Resource":"events","Unrestricted":false,"None":false,"Where":{"op":"and","children":[{"op":"eq","field":"account_id","value":3},{"op":"eq","field":"granted_to","value":7}]}}
SELECT "e"."event_id" FROM "events" AS "e" WHERE (("e"."account_id" = 3 AND "e"."imei" <@ ARRAY(SELECT "grant"."imei" FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = 7)))
