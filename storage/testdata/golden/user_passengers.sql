-- user (account 7, manager 3), passengers
-- scope: {"Resource":"passengers","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":7}}
SELECT "p"."passenger_id" FROM "passengers" AS "p" WHERE ("p"."account_id" = 7)
