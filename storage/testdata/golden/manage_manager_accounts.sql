-- manager (account 7, manager 3), management scope of accounts
-- scope: {"Resource":"accounts","Unrestricted":false,"None":false,"Where":{"op":"or","children":[{"op":"eq","field":"id","value":7},{"op":"eq","field":"manager_id","value":7},{"op":"and","children":[{"op":"eq","field":"type","value":"subaccount"},{"op":"eq","field":"grand_manager_id","value":7}]}]}}
SELECT "a"."id" FROM "accounts" AS "a" WHERE (("a"."id" = 7 OR "a"."manager_id" = 7 OR ("a"."type" = 'subaccount' AND "a"."manager_id" IN (SELECT "up"."id" FROM "accounts" AS "up" WHERE "up"."manager_id" = 7))))
