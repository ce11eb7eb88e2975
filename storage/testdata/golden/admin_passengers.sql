-- admin (account 7, manager 3), passengers
-- scope: {"Resource":"passengers","Unrestricted":true,"None":false,"Where":null}
SELECT "p"."passenger_id" FROM "passengers" AS "p" WHERE (TRUE)
