-- user (account 7, manager 3), notifications
-- scope: {"Resource":"notifications","Unrestricted":false,"None":false,"Where":{"op":"eq","field":"account_id","value":7}}
SELECT "n"."id" FROM "notifications" AS "n" WHERE ("n"."account_id" = 7)
