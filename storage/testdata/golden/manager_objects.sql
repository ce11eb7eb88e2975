-- manager (account 7, manager 3), objects
-- scope: {"Resource":"objects","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "o"."id" FROM "objects" AS "o" WHERE (("o"."account_id" = 7 OR "o"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
