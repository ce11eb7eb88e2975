package importfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/storage/synth"
)

// notExported are the tables holding account data that an export leaves
// out on purpose, with why; every other table with a column naming an
// account is compared row for row by TestExportRoundTrip.
var notExported = map[string]string{
	"audit_events":         "the operator's record of management writes, kept when a tenant is erased; not the tenant's data",
	"idempotency_keys":     "stored responses of requests made to the source database (its ids), kept for a day; not the tenant's data",
	"usage_daily":          "the operator's billing record of what the API served (docs/design.md §12); not the tenant's data",
	"notification_streams": "the open notification streams of the source's replicas (leases): connections, not the tenant's data",
	"positions":            "the devices' position history (each daily partition too): telemetry kept for the retention, not the configuration an export moves; the device's current state goes with the device",
	"service_states":       "the due state a service record last notified: the destination's own evaluation starts from none (it may notify a state again once)",
	"webhook_deliveries":   "the webhooks' delivery queue (messages to send, sent, failed): queue state of the source's sender, not the tenant's configuration; the webhooks themselves are exported",
	"webhook_attempts":     "the attempts of the webhooks' deliveries: queue state of the source's sender, not the tenant's configuration",
}

// positionsPartition names the daily partitions of positions, which the
// catalog lists as tables of their own.
var positionsPartition = regexp.MustCompile(`^positions_[0-9]{8}$`)

// TestExportRoundTrip exports a tenant's subtree from a database holding
// other tenants too, imports the file into an empty database, and
// compares every table's rows of the subtree column by column: the same
// values, the ids each database assigns aside (a column naming an account
// or a token is compared by the natural key of what it names). The tables
// and columns come from the catalog, so a new table or column holding a
// tenant's data fails this test until the export carries it (or
// notExported says why not).
func TestExportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := storagetest.New(t)
	if _, err := synth.Generate(ctx, src.DB, synth.Config{Seed: 7, Managers: 3, Users: 12, Subaccounts: 6, Devices: 40,
		Services: 80, Reports: 16, Events: 16, Passengers: 40, Grants: 3, Today: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	// The tenant: the first manager, moved to the top (an export names
	// its root's manager, which an empty database does not hold), with
	// what synthetic data lacks: limits and quotas, token lineage inside
	// and outside the subtree, revoked, expired and used tokens, two
	// passengers of one name, old creation times.
	exec(t, src.DB, `UPDATE accounts SET manager_id = NULL, rate_limit = 900, created_at = '2025-01-02T03:04:05.123456Z' WHERE username = 'gen-manager-001'`)
	exec(t, src.DB, `UPDATE accounts SET rate_limit = 300, quota_devices = 50, quota_tokens = 7, timezone = 'America/Sao_Paulo'
		WHERE id = (SELECT min(id) FROM accounts WHERE type = 'user' AND manager_id = (SELECT id FROM accounts WHERE username = 'gen-manager-001'))`)
	exec(t, src.DB, `UPDATE accounts SET quota_subaccounts = 0, quota_passengers = 12
		WHERE id = (SELECT max(id) FROM accounts WHERE type = 'user' AND manager_id = (SELECT id FROM accounts WHERE username = 'gen-manager-001'))`)
	exec(t, src.DB, `
		WITH u AS (SELECT min(id) AS id FROM accounts WHERE type = 'user' AND manager_id = (SELECT id FROM accounts WHERE username = 'gen-manager-001')),
		     outside AS (SELECT min(t.id) AS id FROM tokens t JOIN accounts a ON a.id = t.account_id WHERE a.username = 'gen-admin')
		INSERT INTO tokens (account_id, name, hash, permissions, expires_at, revoked_at, last_used_at, rate_limit, parent_token_id, created_at)
		SELECT u.id, 'minted-outside', sha256('a'::bytea), '{"GET *"}', '2030-01-01T00:00:00Z', NULL, '2026-11-19T10:00:00.5Z', 60, outside.id, '2026-01-01T00:00:00Z'
		FROM u, outside`)
	exec(t, src.DB, `
		WITH u AS (SELECT min(id) AS id FROM accounts WHERE type = 'user' AND manager_id = (SELECT id FROM accounts WHERE username = 'gen-manager-001'))
		INSERT INTO tokens (account_id, name, hash, permissions, expires_at)
		SELECT u.id, 'parent', sha256('b'::bytea), '{"*"}', '2020-01-01T00:00:00Z' FROM u`)
	exec(t, src.DB, `
		WITH p AS (SELECT id, account_id FROM tokens WHERE name = 'parent')
		INSERT INTO tokens (account_id, name, hash, permissions, parent_token_id)
		SELECT s.id, 'child', sha256('c'::bytea), '{"GET /services"}', p.id FROM p JOIN accounts s ON s.manager_id = p.account_id AND s.type = 'subaccount'
		ORDER BY s.id LIMIT 1`)
	exec(t, src.DB, `UPDATE tokens SET revoked_at = '2026-06-01T00:00:00Z' WHERE name = 'parent'`) // the child is revoked with it
	exec(t, src.DB, `
		WITH u AS (SELECT min(id) AS id FROM accounts WHERE type = 'user' AND manager_id = (SELECT id FROM accounts WHERE username = 'gen-manager-001'))
		INSERT INTO passengers (account_id, passenger_name, passenger_phone, created_at)
		SELECT u.id, 'Ana Silva', '+351 1', '2024-05-05T05:05:05Z' FROM u UNION ALL SELECT u.id, 'Ana Silva', '+351 2', now() FROM u`)
	fillFromDemo(t, src.DB, "gen-manager-001")

	var file bytes.Buffer
	res, err := importfile.Export(ctx, src.DB, "gen-manager-001", &file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exported %s", res)
	if _, err := importfile.Export(ctx, src.DB, "nobody", &bytes.Buffer{}); !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("export of an unknown account: %v, want ErrNotFound naming it", err)
	}
	if strings.Contains(file.String(), `"secret"`) || !strings.Contains(file.String(), `"secret_hash"`) {
		t.Error("the export holds a secret field or no secret_hash")
	}

	dst := storagetest.New(t)
	loaded, err := importfile.Load(ctx, dst.DB, bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatalf("import of the export: %v", err)
	}
	for name, n := range res {
		if loaded[name].Inserted != n.Inserted || loaded[name].Skipped != 0 {
			t.Errorf("%s: exported %d records, import inserted %d and skipped %d", name, n.Inserted, loaded[name].Inserted, loaded[name].Skipped)
		}
	}
	compareSubtree(t, src.DB, dst.DB, "gen-manager-001")
	if !strings.Contains(file.String(), `"timezone":"America/Sao_Paulo"`) {
		t.Error("the export does not carry an account's timezone")
	}

	again, err := importfile.Load(ctx, dst.DB, bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range again {
		if n.Inserted != 0 {
			t.Errorf("re-import of the export inserted %d %s", n.Inserted, name)
		}
	}
	compareSubtree(t, src.DB, dst.DB, "gen-manager-001")
}

func exec(t *testing.T, db *bun.DB, query string) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// column is a column of the catalog: what the round trip compares.
type column struct {
	Table    string `bun:"table_name"`
	Name     string `bun:"column_name"`
	Identity bool   `bun:"identity"`
	// Refers is the table a single-column foreign key names, or "".
	Refers string `bun:"refers"`
}

// kind says how a column is compared: "id" (assigned by the database, not
// compared), "account" or "token" (by the natural key of what it names),
// or "" (by value).
func (c column) kind() string {
	switch {
	case c.Identity:
		return "id"
	case c.Refers == "accounts" || c.Name == "account_id" || strings.HasSuffix(c.Name, "_account_id"):
		return "account"
	case c.Refers == "tokens":
		return "token"
	}
	return ""
}

func catalog(t *testing.T, db *bun.DB) map[string][]column {
	t.Helper()
	var cols []column
	if err := db.NewRaw(`
		SELECT c.relname AS table_name, a.attname AS column_name, a.attidentity <> '' AS identity,
		       COALESCE((SELECT f.confrelid::regclass::text FROM pg_constraint f
		                 WHERE f.conrelid = c.oid AND f.contype = 'f' AND f.conkey = ARRAY[a.attnum]), '') AS refers
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname NOT LIKE 'bun_%' AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY 1, a.attnum`).Scan(context.Background(), &cols); err != nil {
		t.Fatal(err)
	}
	out := map[string][]column{}
	for _, c := range cols {
		out[c.Table] = append(out[c.Table], c)
	}
	return out
}

// names maps the ids of accounts and tokens of db to natural keys: every
// account by id, and the tokens of the accounts in keep (nil: all) as
// "username/name"; a token outside keep maps to nothing (the export does
// not write a parent outside the subtree).
func names(t *testing.T, db *bun.DB, keep map[string]bool) (accounts, tokens map[string]string) {
	t.Helper()
	var rows []struct {
		Kind, ID, Key string
	}
	if err := db.NewRaw(`SELECT 'a' AS kind, id::text AS id, username AS key FROM accounts
		UNION ALL SELECT 't', t.id::text, a.username || '/' || t.name FROM tokens t JOIN accounts a ON a.id = t.account_id`).
		Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	accounts, tokens = map[string]string{}, map[string]string{}
	for _, r := range rows {
		if r.Kind == "a" {
			accounts[r.ID] = r.Key
		} else if owner, _, _ := strings.Cut(r.Key, "/"); keep == nil || keep[owner] {
			tokens[r.ID] = r.Key
		}
	}
	return accounts, tokens
}

// subtree returns the usernames of root and every account below it.
func subtree(t *testing.T, db *bun.DB, root string) map[string]bool {
	t.Helper()
	var users []string
	if err := db.NewRaw(`WITH RECURSIVE s AS (SELECT id, username FROM accounts WHERE username = ?
		UNION ALL SELECT a.id, a.username FROM accounts a JOIN s ON a.manager_id = s.id) SELECT username FROM s`, root).
		Scan(context.Background(), &users); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, u := range users {
		out[u] = true
	}
	return out
}

// rowsOf returns the rows of table in db as canonical JSON, the
// references by natural key, ids dropped; with members, only the rows one
// of whose account columns names a member (the accounts table: the
// members themselves).
func rowsOf(t *testing.T, db *bun.DB, table string, cols []column, accounts, tokens map[string]string, members map[string]bool) []string {
	t.Helper()
	query := fmt.Sprintf(`SELECT to_jsonb(x)::text FROM %q x`, table)
	if table == "account_row_counts" {
		// striped counters: what counts is the sum per account
		query = "SELECT to_jsonb(x)::text FROM (SELECT resource, account_id, sum(n) AS n FROM account_row_counts GROUP BY 1, 2 HAVING sum(n) <> 0) x"
		cols = []column{{Name: "resource"}, {Name: "account_id"}, {Name: "n"}}
	}
	if table == "notifications" {
		// The ids of the rows a notification names and its transaction's
		// id are each database's own: the record names its event rule and
		// service record (and the device is its imei).
		query = `SELECT to_jsonb(x)::text FROM (SELECT n.id, n.account_id, e.name AS event, s.name AS service, n.type, n.imei,
			n.time, n.created_at, n.value, n.lat, n.lon, n.message FROM notifications n
			LEFT JOIN events e ON e.event_id = n.event_id LEFT JOIN services s ON s.service_id = n.service_id) x`
		cols = []column{{Name: "id", Identity: true}, {Name: "account_id"}}
	}
	var raws []string
	if err := db.NewRaw(query).Scan(context.Background(), &raws); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	var out []string
	for _, raw := range raws {
		var row map[string]any
		if err := json.Unmarshal([]byte(raw), &row); err != nil {
			t.Fatal(err)
		}
		member := members == nil
		for _, c := range cols {
			v := row[c.Name]
			id := fmt.Sprint(v)
			switch c.kind() {
			case "id":
				if table == "accounts" && members != nil && members[accounts[id]] {
					member = true
				}
				delete(row, c.Name)
			case "account":
				if v != nil && accounts[id] == "" {
					row[c.Name] = nil // placed at the top (names)
				} else if v != nil {
					row[c.Name] = "account:" + accounts[id]
					if table != "accounts" && members != nil && members[accounts[id]] {
						member = true
					}
				}
			case "token":
				if v != nil {
					if key, ok := tokens[id]; ok {
						row[c.Name] = "token:" + key
					} else {
						row[c.Name] = nil
					}
				}
			}
		}
		if member {
			b, _ := json.Marshal(row)
			out = append(out, string(b))
		}
	}
	slices.Sort(out)
	return out
}

// compareSubtree compares every table's rows of root's subtree in src with
// every row of dst.
func compareSubtree(t *testing.T, src, dst *bun.DB, root string) {
	t.Helper()
	comparePlaced(t, src, dst, root, nil)
}

// comparePlaced is compareSubtree for a subtree imported elsewhere: placed
// maps the usernames of src accounts outside the subtree (the root's
// manager) to the dst accounts that took their place, "" for none (the
// root at the top).
func comparePlaced(t *testing.T, src, dst *bun.DB, root string, placed map[string]string) {
	t.Helper()
	members := subtree(t, src, root)
	srcAccounts, srcTokens := names(t, src, members)
	for id, name := range srcAccounts {
		if to, ok := placed[name]; ok {
			srcAccounts[id] = to
		}
	}
	dstAccounts, dstTokens := names(t, dst, nil)
	var dstMembers map[string]bool // the whole database, unless placed next to accounts of its own
	if placed != nil {
		dstMembers = subtree(t, dst, root)
	}
	cat := catalog(t, src)
	compared := 0
	for _, table := range slices.Sorted(func(yield func(string) bool) {
		for k := range cat {
			if !yield(k) {
				return
			}
		}
	}) {
		cols := cat[table]
		if !slices.ContainsFunc(cols, func(c column) bool { return c.kind() == "account" }) && table != "accounts" {
			continue // holds no account's data
		}
		why, ok := notExported[table]
		if !ok && positionsPartition.MatchString(table) {
			why, ok = notExported["positions"]
		}
		if ok {
			t.Logf("%s: not exported: %s", table, why)
			continue
		}
		want := rowsOf(t, src, table, cols, srcAccounts, srcTokens, members)
		got := rowsOf(t, dst, table, cols, dstAccounts, dstTokens, dstMembers)
		if len(want) == 0 {
			t.Errorf("%s: the source subtree has no rows: the test world must hold some: give the table an import section "+
				"(storage/importfile/%s.go, with a dump) and records in the demo data (storage/demodata/demodata.json), "+
				"which fill what synth.Generate does not (fillFromDemo)", table, table)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d rows after the round trip, want %d; first differences:\n%s", table, len(got), len(want), firstDiff(got, want))
			continue
		}
		compared += len(want)
		t.Logf("%s: %d rows identical", table, len(want))
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}

// firstDiff shows a few rows that are in one list and not the other.
func firstDiff(got, want []string) string {
	var b strings.Builder
	n := 0
	for _, w := range want {
		if !slices.Contains(got, w) && n < 3 {
			fmt.Fprintf(&b, "  missing: %s\n", w)
			n++
		}
	}
	n = 0
	for _, g := range got {
		if !slices.Contains(want, g) && n < 3 {
			fmt.Fprintf(&b, "  extra:   %s\n", g)
			n++
		}
	}
	return b.String()
}

// TestExportPlacedElsewhere is issue 34 item 6: a customer exported from
// under its manager is imported into fresh installations, which hold no
// such manager. Without a placement the import refuses it (unknown
// manager) and writes nothing; placed at the top (Placement.Top) or under
// a manager of the new installation (Placement.Under), every table's rows
// of the subtree are the source's, the root's manager aside. A placement
// that breaks the fixed levels (a user under a user, a subaccount at the
// top), names an account of the file, or asks for both, is refused,
// naming the record.
func TestExportPlacedElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := storagetest.New(t)
	if _, err := synth.Generate(ctx, src.DB, synth.Config{Seed: 11, Managers: 2, Users: 4, Subaccounts: 4, Devices: 20,
		Services: 40, Reports: 12, Events: 12, Passengers: 20, Grants: 3, Today: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	// The customer: the user under a manager with the most subaccounts.
	var customer, manager string
	if err := src.DB.NewRaw(`SELECT u.username, m.username FROM accounts u JOIN accounts m ON m.id = u.manager_id
		WHERE u.type = 'user' AND m.type = 'manager'
		ORDER BY (SELECT count(*) FROM accounts s WHERE s.manager_id = u.id) DESC, u.id LIMIT 1`).Scan(ctx, &customer, &manager); err != nil {
		t.Fatal(err)
	}
	fillFromDemo(t, src.DB, customer)
	var file bytes.Buffer
	if _, err := importfile.Export(ctx, src.DB, customer, &file); err != nil {
		t.Fatal(err)
	}
	load := func(dst *storagetest.DB, p importfile.Placement) error {
		_, err := importfile.LoadPlaced(ctx, dst.DB, bytes.NewReader(file.Bytes()), p)
		return err
	}
	empty := func(dst *storagetest.DB) {
		t.Helper()
		var n int
		if err := dst.NewRaw("SELECT count(*) FROM accounts WHERE username <> 'reseller' AND username <> 'shop'").Scan(ctx, &n); err != nil || n != 0 {
			t.Fatalf("a refused import left %d accounts (%v)", n, err)
		}
	}

	t.Run("refused", func(t *testing.T) {
		dst := storagetest.New(t)
		exec(t, dst.DB, `INSERT INTO accounts (username, email, type) VALUES ('shop', '', 'user')`)
		for _, c := range []struct {
			name  string
			place importfile.Placement
			want  string
		}{
			{"none", importfile.Placement{}, fmt.Sprintf("unknown manager %q", manager)},
			{"unknown", importfile.Placement{Under: "nobody"}, `unknown manager "nobody"`},
			{"user under a user", importfile.Placement{Under: "shop"}, `manager "shop" is a user, which cannot manage a user`},
			{"under the file's own", importfile.Placement{Under: customer}, "the account is in the file"},
			{"both", importfile.Placement{Under: "shop", Top: true}, "not both"},
		} {
			err := load(dst, c.place)
			if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want ErrInvalid saying %q", c.name, err, c.want)
			}
			empty(dst)
		}
		// A subaccount cannot be at the top: export one and place it there.
		var sub string
		if err := src.DB.NewRaw(`SELECT username FROM accounts WHERE type = 'subaccount' ORDER BY id LIMIT 1`).Scan(ctx, &sub); err != nil {
			t.Fatal(err)
		}
		var subFile bytes.Buffer
		if _, err := importfile.Export(ctx, src.DB, sub, &subFile); err != nil {
			t.Fatal(err)
		}
		if _, err := importfile.LoadPlaced(ctx, dst.DB, &subFile, importfile.Placement{Top: true}); !errors.Is(err, storage.ErrInvalid) ||
			!strings.Contains(err.Error(), "a subaccount needs a manager") {
			t.Errorf("a subaccount at the top: %v", err)
		}
		empty(dst)
	})
	t.Run("top", func(t *testing.T) {
		dst := storagetest.New(t)
		if err := load(dst, importfile.Placement{Top: true}); err != nil {
			t.Fatal(err)
		}
		comparePlaced(t, src.DB, dst.DB, customer, map[string]string{manager: ""})
	})
	t.Run("under", func(t *testing.T) {
		dst := storagetest.New(t)
		exec(t, dst.DB, `INSERT INTO accounts (username, email, type) VALUES ('reseller', '', 'manager')`)
		if err := load(dst, importfile.Placement{Under: "reseller"}); err != nil {
			t.Fatal(err)
		}
		comparePlaced(t, src.DB, dst.DB, customer, map[string]string{manager: "reseller"})
		// Again: every record exists, nothing is added.
		res, err := importfile.LoadPlaced(ctx, dst.DB, bytes.NewReader(file.Bytes()), importfile.Placement{Under: "reseller"})
		if err != nil {
			t.Fatal(err)
		}
		for name, n := range res {
			if n.Inserted != 0 {
				t.Errorf("re-import inserted %d %s", n.Inserted, name)
			}
		}
	})
}
