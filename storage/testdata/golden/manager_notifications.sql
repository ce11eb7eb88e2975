-- manager (account 7, manager 3), notifications
-- scope: {"Resource":"notifications","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"account_id","value":7},{"op":"eq","field":"manager_id","value":7}]}}
SELECT "n"."id" FROM "notifications" AS "n" WHERE (("n"."account_id" = 7 OR "n"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 7)))
