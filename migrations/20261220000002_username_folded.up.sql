-- Usernames are unique compared case-insensitively after NFC (docs/design.md §9,
-- issue 19 item 10): "Admin", "ADMIN" and "admin" are one username. The
-- grammar that new usernames follow (storage.UsernamePattern, checked by
-- the API and the import) admits ASCII letters only, so NFC changes none
-- of them; the index also covers usernames stored before the grammar.
--
-- A database that already holds usernames that collide is refused, with
-- every colliding group named; nothing is renamed silently. Rename all but
-- one of each group, then migrate again.
DO $$
DECLARE
    bad text;
BEGIN
    SELECT string_agg(names, '; ' ORDER BY names)
    INTO bad
    FROM (
        SELECT string_agg(format('%s (id %s)', username, id), ', ' ORDER BY id) AS names
        FROM accounts
        GROUP BY lower(normalize(username, NFC))
        HAVING count(*) > 1
    ) AS groups;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'usernames that differ only in case (or Unicode normalisation) cannot coexist: %', bad
            USING HINT = 'rename all but one account of each group (UPDATE accounts SET username = ... WHERE id = ...), then migrate again; nothing was changed',
                  ERRCODE = 'unique_violation';
    END IF;
END
$$;

--bun:split

CREATE UNIQUE INDEX accounts_username_folded_key ON accounts (lower(normalize(username, NFC)));
