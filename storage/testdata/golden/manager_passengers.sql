-- manager (account 7, manager 3), passengers
-- scope: {"Resource":"passengers","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "p"."passenger_id" FROM "passengers" AS "p" WHERE (("p"."account_id" = 7 OR "p"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
