-- subaccount (account 7, manager 3), reports
-- scope: {"Resource":"reports","Unrestricted":false,"None":false,"Where":{"op":"and","children":[{"op":"eq","field":"account_id","value":3},{"op":"eq","field":"granted_to","value":7}]}}
SELECT "r"."report_id" FROM "reports" AS "r" WHERE (("r"."account_id" = 3 AND "r"."imei" <@ ARRAY(SELECT "grant"."imei" FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = 7)))
