-- manager (account 7, manager 3), zones
-- scope: {"Resource":"zones","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "z"."id" FROM "zones" AS "z" WHERE (("z"."account_id" = 7 OR "z"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
