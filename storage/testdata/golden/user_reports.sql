-- user (account 7, manager 3), reports
-- scope: {"Resource":"reports","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":7}}
SELECT "r"."report_id" FROM "reports" AS "r" WHERE ("r"."account_id" = 7)
