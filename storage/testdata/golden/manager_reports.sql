-- manager (account 7, manager 3), reports
-- scope: {"Resource":"reports","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "r"."report_id" FROM "reports" AS "r" WHERE (("r"."account_id" = 7 OR "r"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
