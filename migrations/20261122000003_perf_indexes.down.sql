CREATE INDEX IF NOT EXISTS accounts_manager_id_idx ON accounts (manager_id);

--bun:split

DROP INDEX IF EXISTS accounts_manager_id_id_idx;
