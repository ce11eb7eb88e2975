-- subaccount (account 7, manager 3), management scope of accounts
-- scope: {"Resource":"accounts","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"id","value":7}}
SELECT "a"."id" FROM "accounts" AS "a" WHERE ("a"."id" = 7)
