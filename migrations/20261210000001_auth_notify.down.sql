DROP TRIGGER IF EXISTS accounts_auth_notify_truncate ON accounts;
DROP TRIGGER IF EXISTS accounts_auth_notify ON accounts;
DROP TRIGGER IF EXISTS tokens_auth_notify_truncate ON tokens;
DROP TRIGGER IF EXISTS tokens_auth_notify ON tokens;
DROP FUNCTION IF EXISTS fleet_auth_notify_all();
DROP FUNCTION IF EXISTS fleet_auth_notify_account();
DROP FUNCTION IF EXISTS fleet_auth_notify_token();
