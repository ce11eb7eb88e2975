-- subaccount (account 7, manager 3), objects
-- scope: {"Resource":"objects","Unrestricted":false,"None":false,"Where":{"op":"and","children":[{"op":"eq","field":"account_id","value":3},{"op":"eq","field":"granted_to","value":7}]}}
SELECT "o"."id" FROM "objects" AS "o" WHERE (("o"."account_id" = 3 AND EXISTS (SELECT 1 FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = 7 AND "grant"."imei" = "o"."imei")))
