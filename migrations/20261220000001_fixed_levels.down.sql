DROP TRIGGER IF EXISTS accounts_fixed_levels ON accounts;

--bun:split

DROP FUNCTION IF EXISTS fleet_account_levels();

--bun:split

DROP FUNCTION IF EXISTS fleet_level_allowed(account_type, account_type);
