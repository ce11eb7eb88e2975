-- admin (account 7, manager 3), services
-- scope: {"Resource":"services","Unrestricted":true,"None":false,"Where":null}
SELECT "s"."service_id" FROM "services" AS "s" WHERE (TRUE)
