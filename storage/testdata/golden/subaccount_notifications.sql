-- subaccount (account 7, manager 3), notifications
-- scope: {"Resource":"notifications","Unrestricted":false,"None":false,"Where":{"op":"and","children":[{"op":"eq","field":"account_id","value":3},{"op":"eq","field":"granted_to","value":7}]}}
SELECT "n"."id" FROM "notifications" AS "n" WHERE (("n"."account_id" = 3 AND EXISTS (SELECT 1 FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = 7 AND "grant"."imei" = "n"."imei")))
