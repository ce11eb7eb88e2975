-- admin (account 7, manager 3), objects
-- scope: {"Resource":"objects","Unrestricted":true,"None":false,"Where":null}
SELECT "o"."id" FROM "objects" AS "o" WHERE (TRUE)
