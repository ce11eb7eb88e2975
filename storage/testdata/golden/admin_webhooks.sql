-- admin (account 7, manager 3), webhooks
-- scope: {"Resource":"webhooks","Unrestricted":true,"None":false,"Where":null}
SELECT "wh"."id" FROM "webhooks" AS "wh" WHERE (TRUE)
