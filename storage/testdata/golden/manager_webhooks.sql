-- manager (account 7, manager 3), webhooks
-- scope: {"Resource":"webhooks","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "wh"."id" FROM "webhooks" AS "wh" WHERE (("wh"."account_id" = 7 OR "wh"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
