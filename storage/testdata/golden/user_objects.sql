-- user (account 7, manager 3), objects
-- scope: {"Resource":"objects","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":7}}
SELECT "o"."id" FROM "objects" AS "o" WHERE ("o"."account_id" = 7)
