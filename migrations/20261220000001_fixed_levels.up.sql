-- The account tree has fixed levels (docs/design.md §2, issue 19): admin →
-- manager → user → subaccount. A manager sits at the top or directly under
-- an admin; a user at the top or directly under a manager or an admin; a
-- subaccount directly under a user; an admin at the top. So an account has
-- at most three accounts above it. The policy and the import refuse any
-- other shape; this trigger makes the database refuse it too, whoever
-- writes (the API, the import, SQL by hand).
--
-- A database that already holds another shape (a manager under a manager,
-- which docs/design.md §9's old wording let an admin create) is refused, with the
-- accounts named: nothing is rewritten silently. Move or remove them (the
-- message says which), then run the migration again.
DO $$
DECLARE
    bad text;
BEGIN
    SELECT string_agg(format('%s %s (id %s) under %s %s (id %s)', c.type, c.username, c.id, p.type, p.username, p.id),
                      '; ' ORDER BY c.id)
    INTO bad
    FROM accounts AS c
    JOIN accounts AS p ON p.id = c.manager_id
    WHERE NOT (c.type = 'manager' AND p.type = 'admin'
            OR c.type = 'user' AND p.type IN ('admin', 'manager')
            OR c.type = 'subaccount' AND p.type = 'user');
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'the account tree is not in its fixed levels (admin → manager → user → subaccount; no manager under a manager): %', bad
            USING HINT = 'move each named account to the top or under an account of an allowed type (UPDATE accounts SET manager_id = ...), then migrate again; nothing was changed',
                  ERRCODE = 'check_violation';
    END IF;
END
$$;

--bun:split

-- fleet_level_allowed: may an account of type child sit directly under an
-- account of type parent?
CREATE FUNCTION fleet_level_allowed(child account_type, parent account_type) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT child = 'manager' AND parent = 'admin'
        OR child = 'user' AND parent IN ('admin', 'manager')
        OR child = 'subaccount' AND parent = 'user'
$$;

--bun:split

CREATE FUNCTION fleet_account_levels() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    parent accounts%ROWTYPE;
    child accounts%ROWTYPE;
BEGIN
    IF NEW.manager_id IS NOT NULL THEN
        -- FOR SHARE: the parent's type cannot change under a new child
        -- before this transaction ends. A missing parent is the foreign
        -- key's to refuse.
        SELECT * INTO parent FROM accounts WHERE id = NEW.manager_id FOR SHARE;
        IF FOUND AND NOT fleet_level_allowed(NEW.type, parent.type) THEN
            RAISE EXCEPTION 'a % cannot be under a % (account %, manager %): the tree has fixed levels admin → manager → user → subaccount',
                NEW.type, parent.type, NEW.username, parent.username
                USING ERRCODE = 'check_violation', COLUMN = 'manager_id';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.type IS DISTINCT FROM OLD.type THEN
        SELECT * INTO child FROM accounts
        WHERE manager_id = NEW.id AND NOT fleet_level_allowed(type, NEW.type)
        ORDER BY id LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'account % cannot become a %: it manages the % %, and the tree has fixed levels admin → manager → user → subaccount',
                NEW.username, NEW.type, child.type, child.username
                USING ERRCODE = 'check_violation', COLUMN = 'type';
        END IF;
    END IF;
    RETURN NEW;
END
$$;

--bun:split

CREATE TRIGGER accounts_fixed_levels BEFORE INSERT OR UPDATE OF type, manager_id ON accounts
    FOR EACH ROW EXECUTE FUNCTION fleet_account_levels();
