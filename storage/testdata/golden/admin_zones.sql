-- admin (account 7, manager 3), zones
-- scope: {"Resource":"zones","Unrestricted":true,"None":false,"Where":null}
SELECT "z"."id" FROM "zones" AS "z" WHERE (TRUE)
