-- subaccount (account 7, manager 3), zones
-- scope: {"Resource":"zones","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":3}}
SELECT "z"."id" FROM "zones" AS "z" WHERE ("z"."account_id" = 3)
