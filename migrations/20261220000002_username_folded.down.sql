DROP INDEX IF EXISTS accounts_username_folded_key;
