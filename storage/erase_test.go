package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
)

// keptByErase are the tables holding account ids that an erase keeps on
// purpose, with why.
var keptByErase = map[string]string{
	"audit_events": "the operator's record: kept, its values naming the erased accounts replaced",
	"usage_daily":  "billing data: what the API served the erased accounts outlives them (ids and routes, no personal data)",
}

// TestEraseLeavesNoRow erases a manager's subtree (the demo data's
// fleetco: five users, two subaccounts, their devices, grants, tokens and
// records) and checks, on every table of the schema with a column naming
// an account (read from the catalog: a foreign key to accounts, or a
// column named account_id, *_account_id or manager_id), that no row names
// an erased account: a new table holding account data fails this test
// until the erase deletes its rows or keptByErase says why not. It also
// checks the dry run's counts, the audit event, the scrubbed earlier
// events, that other tenants keep every row, and the refusals.
func TestEraseLeavesNoRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	// an earlier audit event holding an erased account's personal data,
	// and one of another tenant
	if _, err := db.ExecContext(ctx, `INSERT INTO audit_events (actor_account_id, actor_token_id, action, target_account_id, target_id, changes)
		SELECT 1, 1, 'account.create', id, id, jsonb_build_object('username', jsonb_build_object('before', null, 'after', username),
			'email', jsonb_build_object('before', null, 'after', email), 'type', jsonb_build_object('before', null, 'after', type))
		FROM accounts WHERE username IN ('acme', 'tailspin')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO idempotency_keys (account_id, key, request_hash, status, response)
		SELECT id, 'k1', '\x00', 201, '{}' FROM accounts WHERE username = 'acme'`); err != nil {
		t.Fatal(err)
	}

	cols := map[string][]string{}
	var rows []struct{ Table, Column string }
	if err := db.NewRaw(`
		SELECT c.relname AS table, a.attname AS column
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attnum > 0 AND NOT a.attisdropped
		  AND (a.attname IN ('account_id', 'manager_id') OR a.attname LIKE '%\_account\_id'
		       OR EXISTS (SELECT 1 FROM pg_constraint f WHERE f.conrelid = c.oid AND f.contype = 'f'
		                  AND f.conkey = ARRAY[a.attnum] AND f.confrelid = 'accounts'::regclass))
		ORDER BY 1, 2`).Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		cols[r.Table] = append(cols[r.Table], r.Column)
	}
	cols["accounts"] = append(cols["accounts"], "id")
	for table := range cols {
		if _, kept := keptByErase[table]; !kept && !slices.Contains(storage.EraseTables(), table) {
			t.Errorf("table %s holds account ids and an erase neither deletes its rows nor keeps them on purpose: a table declared with declare (storage/<resource>.go) has its step derived; any other needs its step in eraseSteps (storage/erase.go), or its entry in keptByErase with why", table)
		}
	}

	var ids []int64
	if err := db.NewRaw(`WITH RECURSIVE s AS (SELECT id FROM accounts WHERE username = 'fleetco'
		UNION ALL SELECT a.id FROM accounts a JOIN s ON a.manager_id = s.id) SELECT id FROM s ORDER BY id`).Scan(ctx, &ids); err != nil {
		t.Fatal(err)
	}
	namesOf := func(table string) map[string]int {
		out := map[string]int{}
		for _, c := range cols[table] {
			var n int
			q := fmt.Sprintf(`SELECT count(*) FROM %q WHERE %q = ANY(?)`, table, c)
			if err := db.NewRaw(q, pgdialect.Array(ids)).Scan(ctx, &n); err != nil {
				t.Fatal(err)
			}
			out[c] = n
		}
		return out
	}
	// outside counts the rows of a table that name no erased account.
	outside := func(table string) int {
		var conds []string
		for _, c := range cols[table] {
			conds = append(conds, fmt.Sprintf(`COALESCE(%q = ANY(?0::bigint[]), false)`, c))
		}
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %q WHERE NOT (%s)`, table, strings.Join(conds, " OR "))
		if err := db.NewRaw(q, pgdialect.Array(ids)).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	others := map[string]int{}
	for table := range cols {
		others[table] = outside(table)
	}

	dry, err := store.EraseAccount(ctx, "fleetco", true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(slices.Values(dry.Accounts)), ids) || dry.Accounts[0] != ids[0] {
		t.Fatalf("dry run: subtree %v, want %v", dry.Accounts, ids)
	}
	got, err := store.EraseAccount(ctx, "fleetco", false)
	if err != nil {
		t.Fatal(err)
	}
	for table, n := range dry.Rows {
		if got.Rows[table] != n {
			t.Errorf("%s: the dry run counted %d rows, the erase deleted %d", table, n, got.Rows[table])
		}
	}
	for _, table := range []string{"accounts", "tokens", "objects", "object_grants", "services", "passengers", "idempotency_keys"} {
		if got.Rows[table] == 0 {
			t.Errorf("%s: nothing erased: the test world must hold rows of the subtree", table)
		}
	}
	if got.Scrubbed["audit_events"] != 1 || dry.Scrubbed["audit_events"] != 1 {
		t.Errorf("%d earlier audit events scrubbed (dry run: %d), want 1", got.Scrubbed["audit_events"], dry.Scrubbed["audit_events"])
	}

	for table := range cols {
		if _, kept := keptByErase[table]; kept {
			continue
		}
		for c, n := range namesOf(table) {
			if n != 0 {
				t.Errorf("%s.%s: %d rows still name an erased account", table, c, n)
			}
		}
		if n := outside(table); n != others[table] {
			t.Errorf("%s: %d rows of other tenants after the erase, want %d", table, n, others[table])
		}
	}

	var trail []struct {
		Action  string
		Target  int64 `bun:"target_account_id"`
		Actor   int64 `bun:"actor_account_id"`
		Changes string
	}
	if err := db.NewRaw(`SELECT action, target_account_id, actor_account_id, changes::text AS changes FROM audit_events ORDER BY id`).
		Scan(ctx, &trail); err != nil {
		t.Fatal(err)
	}
	if len(trail) != 3 {
		t.Fatalf("audit trail %+v, want the two earlier events and the erase", trail)
	}
	if strings.Contains(trail[0].Changes, "acme") || !strings.Contains(trail[0].Changes, storage.ErasedMark) || !strings.Contains(trail[0].Changes, `"type"`) {
		t.Errorf("the erased account's earlier event: %s, want its username and e-mail replaced, the rest kept", trail[0].Changes)
	}
	if !strings.Contains(trail[1].Changes, "tailspin") {
		t.Errorf("another tenant's event changed: %s", trail[1].Changes)
	}
	erase := trail[2]
	if erase.Action != "account.erase" || erase.Actor != 0 || !strings.Contains(erase.Changes, `"tokens": {"after": 0, "before": `) ||
		strings.Contains(erase.Changes, "fleetco") {
		t.Errorf("erase event %+v", erase)
	}

	if _, err := store.EraseAccount(ctx, "fleetco", false); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), `"fleetco"`) {
		t.Errorf("erasing it again: %v, want ErrNotFound naming it", err)
	}
	if _, err := store.EraseAccount(ctx, "admin", false); !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("erasing an admin: %v, want ErrInvalid", err)
	}
}
