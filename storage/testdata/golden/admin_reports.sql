-- admin (account 7, manager 3), reports
-- scope: {"Resource":"reports","Unrestricted":true,"None":false,"Where":null}
SELECT "r"."report_id" FROM "reports" AS "r" WHERE (TRUE)
