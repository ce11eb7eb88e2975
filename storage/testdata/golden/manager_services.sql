-- manager (account 7, manager 3), services
-- scope: {"Resource":"services","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "s"."service_id" FROM "services" AS "s" WHERE (("s"."account_id" = 7 OR "s"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
