-- admin (account 7, manager 3), notifications
-- scope: {"Resource":"notifications","Unrestricted":true,"None":false,"Where":null}
SELECT "n"."id" FROM "notifications" AS "n" WHERE (TRUE)
