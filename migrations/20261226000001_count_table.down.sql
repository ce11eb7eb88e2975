-- Reverts 20261226000001_count_table.up.sql. The triggers count_table
-- installed belong to the migrations that called it, whose down files
-- remove them (uncount_table, or DROP TABLE) before this one runs.
DROP FUNCTION IF EXISTS count_table(regclass);
DROP FUNCTION IF EXISTS uncount_table(regclass);
