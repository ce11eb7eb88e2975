-- subaccount (account 7, manager 3), webhooks
-- scope: {"Resource":"webhooks","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":7}}
SELECT "wh"."id" FROM "webhooks" AS "wh" WHERE ("wh"."account_id" = 7)
