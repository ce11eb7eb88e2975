-- admin (account 7, manager 3), management scope of accounts
-- scope: {"Resource":"accounts","Unrestricted":true,"None":false,"Where":null}
SELECT "a"."id" FROM "accounts" AS "a" WHERE (TRUE)
