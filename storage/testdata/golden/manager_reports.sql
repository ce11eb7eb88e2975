-- manager (account 7, manager 3), reports
-- scope: {"Resource":"reports","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "r"."report_id" FROM "reports" AS "r" WHERE (("r"."account_id" = 7 OR EXISTS (SELECT 1 FROM "accounts" AS "owner" WHERE "owner"."id" = "r"."account_id" AND "owner"."manager_id" = 7)))
