-- manager (account 7, manager 3), events
-- scope: {"Resource":"events","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "e"."event_id" FROM "events" AS "e" WHERE (("e"."account_id" = 7 OR "e"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
