-- user (account 7, manager 3), services
-- scope: {"Resource":"services","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":7}}
SELECT "s"."service_id" FROM "services" AS "s" WHERE ("s"."account_id" = 7)
