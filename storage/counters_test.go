package storage_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/migrations"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/synth"
	"github.com/fleetapi/fleetapi/tenancy"
)

const countersSeed = 20261210

// countPrincipals are the principals whose totals the counter tests
// compare: every account of the world as itself (subaccounts with both,
// one and no privileges; every type active), an inactive one of each type,
// and random principals (random type, activity, expiry, privileges, now
// and then an account that does not exist).
func countPrincipals(w *world, r *rand.Rand) []policy.Input {
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	var out []policy.Input
	add := func(a worldAccount, active bool, privs []string) {
		p := tenancy.Principal{
			Token:   tenancy.Token{ID: 1, AccountID: a.id, Permissions: []string{"*"}},
			Account: tenancy.Account{ID: a.id, Type: a.typ, ManagerID: a.managerID, Active: active, Privileges: privs},
		}
		out = append(out, policy.NewInput(p, "GET", "/services", today))
	}
	for _, a := range w.accounts {
		add(a, true, []string{"reports", "event_notifications"})
		if a.typ == tenancy.Subaccount {
			add(a, true, []string{"reports"})
			add(a, true, []string{"event_notifications"})
			add(a, true, []string{})
		}
	}
	for _, typ := range []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount} {
		add(w.byType[typ][0], false, nil)
	}
	for range 60 {
		out = append(out, w.randomPrincipal(r))
	}
	return out
}

// totalsMismatch compares, for every principal and resource, the total
// from the counters with the rows the same scope admits, counted; it
// returns the mismatches (described) and how many non-zero totals agreed.
// A scope of a counted table without a counter form is a mismatch too
// (lists would count rows), except a subaccount's: the embedded policy
// scopes subaccounts through device grants (granted_to), which the
// counters do not have, on every resource but passengers.
func totalsMismatch(ctx context.Context, s *storage.Store, e *policy.Engine, principals []policy.Input) (bad []string, agreed int, err error) {
	counted := storage.CountedTables()
	for _, in := range principals {
		for _, resource := range storage.Resources() {
			scope, err := e.Scope(ctx, in, resource)
			if err != nil {
				return nil, 0, fmt.Errorf("scope of %s for %s: %w", resource, principalString(in), err)
			}
			total, ok, rows, err := s.CountedTotal(ctx, scope)
			if err != nil {
				return nil, 0, fmt.Errorf("totals of %s for %s: %w", resource, principalString(in), err)
			}
			switch {
			case !ok && slices.Contains(counted, string(resource)) && in.Account.Type != string(tenancy.Subaccount):
				bad = append(bad, fmt.Sprintf("%s for %s: no counter form", resource, principalString(in)))
			case ok && total != rows:
				bad = append(bad, fmt.Sprintf("%s for %s: counters %d, rows %d", resource, principalString(in), total, rows))
			case ok && total > 0:
				agreed++
			}
		}
	}
	return bad, agreed, nil
}

// TestCountedTotalsDifferential checks the counter-based totals against
// count(*) under the same scope, for every account of the differential
// world (every type, subaccounts with each privilege set and device
// grants) and random principals, for every resource: after the world is
// built, after rounds of random multi-row inserts, updates that move rows
// between accounts and devices (and updates that move nothing), deletes,
// grant and account-tree changes, after concurrent inserts and deletes in
// one account from several goroutines, after TRUNCATE, and after the
// migration is applied again to the data (its backfill). The triggers
// are table-level, so the application's writes, import and generate (COPY
// fires the INSERT triggers) take the same paths as these statements.
func TestCountedTotalsDifferential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(countersSeed, countersSeed))
	w := buildWorld(t, db, r)
	principals := countPrincipals(w, r)
	check := func(stage string) {
		t.Helper()
		bad, agreed, err := totalsMismatch(ctx, s, e, principals)
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		for i, b := range bad {
			if i == 10 {
				t.Errorf("%s: … %d mismatches in all", stage, len(bad))
				break
			}
			t.Errorf("%s: %s", stage, b)
		}
		if agreed == 0 {
			t.Fatalf("%s: no non-zero total was compared: the test checks nothing", stage)
		}
		t.Logf("%s: %d principals × %d resources, %d non-zero totals agree", stage, len(principals), len(storage.Resources()), agreed)
	}
	check("built")
	for round := range 5 {
		mutateRows(t, ctx, db, r, w, round)
		check(fmt.Sprintf("round %d", round))
	}
	concurrentWrites(t, ctx, db, w)
	check("concurrent writes")
	for _, stmt := range []string{
		`TRUNCATE passengers`,
		`INSERT INTO passengers (account_id, passenger_name) SELECT id, 'after truncate' FROM accounts WHERE id % 3 = 0`,
		`TRUNCATE events, reports`,
		`INSERT INTO reports (account_id, name, imei) SELECT account_id, 'after truncate ' || imei, ARRAY[imei] FROM objects WHERE id % 2 = 0`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	check("truncate")
	// The backfill: the migration applied to a database that holds rows
	// (down, then up again) counts them.
	for _, name := range []string{"20261210000002_row_counters.down.sql", "20261210000002_row_counters.up.sql"} {
		sql, err := fs.ReadFile(migrations.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var stripes int
	if err := db.NewRaw(`SELECT count(DISTINCT slot) FROM account_row_counts`).Scan(ctx, &stripes); err != nil || stripes != 1 {
		t.Fatalf("after the backfill: %d stripes (%v), want 1", stripes, err)
	}
	check("backfill")
}

// mutateRows applies one round of random writes to every counted table,
// with the kinds of statement the counters must follow.
func mutateRows(t *testing.T, ctx context.Context, db bun.IDB, r *rand.Rand, w *world, round int) {
	t.Helper()
	k := 3 + r.IntN(5)
	j := r.IntN(k)
	other := w.accounts[r.IntN(len(w.accounts))].id
	var manager worldAccount
	for manager.id == 0 || manager.typ != tenancy.Manager {
		manager = w.byType[tenancy.Manager][r.IntN(len(w.byType[tenancy.Manager]))]
	}
	devices := w.devices[w.byType[tenancy.User][r.IntN(len(w.byType[tenancy.User]))].id]
	tag := fmt.Sprintf(" r%d", round)
	stmts := []struct {
		sql  string
		args []any
	}{
		// multi-row inserts into many accounts and devices
		{`INSERT INTO services (account_id, imei, name) SELECT account_id, imei, name || ? FROM services WHERE service_id % ? = ?`, []any{tag, k, j}},
		{`INSERT INTO reports (account_id, name, imei) SELECT account_id, name || ?, imei FROM reports WHERE report_id % ? = ?`, []any{tag, k, j}},
		{`INSERT INTO events (account_id, name, imei) SELECT account_id, name || ?, imei FROM events WHERE event_id % ? = ?`, []any{tag, k, j}},
		{`INSERT INTO passengers (account_id, passenger_name) SELECT account_id, left(passenger_name, 90) || ? FROM passengers WHERE passenger_id % ? = ?`, []any{tag, k, j}},
		{`INSERT INTO objects (imei, account_id) SELECT imei || ?, account_id FROM objects WHERE id % ? = ?`, []any{tag, k, j}},
		// updates that move rows between accounts and device keys
		{`UPDATE reports SET account_id = ? WHERE report_id % ? = ?`, []any{other, k, (j + 1) % k}},
		{`UPDATE events SET imei = ? WHERE event_id % ? = ?`, []any{pgdialect.Array(devices), k, (j + 1) % k}},
		{`UPDATE passengers SET account_id = ? WHERE passenger_id % ? = ?`, []any{other, k, (j + 1) % k}},
		{`UPDATE services s SET imei = (SELECT o.imei FROM objects o WHERE o.account_id = s.account_id ORDER BY md5(o.imei || s.service_id) LIMIT 1)
		  WHERE service_id % ? = ?`, []any{k, (j + 1) % k}},
		{`UPDATE services s SET account_id = o.account_id, imei = o.imei
		  FROM (SELECT account_id, imei FROM objects WHERE account_id = (SELECT account_id FROM objects ORDER BY md5(imei || ?) LIMIT 1) LIMIT 1) o
		  WHERE s.service_id % ? = ? AND NOT EXISTS (SELECT 1 FROM services x WHERE x.imei = o.imei AND x.name = s.name)`, []any{tag, k, (j + 2) % k}},
		{`UPDATE objects o SET account_id = ? WHERE id % ? = ? AND NOT EXISTS (SELECT 1 FROM services s WHERE s.imei = o.imei)`, []any{other, k, j}},
		// updates that move nothing
		{`UPDATE services SET name = name || '.' WHERE service_id % ? = ?`, []any{k, (j + 3) % k}},
		{`UPDATE passengers SET passenger_active = NOT passenger_active`, nil},
		// deletes
		{`DELETE FROM services WHERE service_id % ? = ?`, []any{k + 1, j}},
		{`DELETE FROM reports WHERE report_id % ? = ?`, []any{k + 1, j}},
		{`DELETE FROM events WHERE event_id % ? = ?`, []any{k + 1, j}},
		{`DELETE FROM passengers WHERE passenger_id % ? = ?`, []any{k + 1, j}},
		{`DELETE FROM objects o WHERE id % ? = ? AND NOT EXISTS (SELECT 1 FROM services s WHERE s.imei = o.imei)`, []any{k + 1, j}},
		// what the scope reads at query time: grants and the account tree
		{`DELETE FROM object_grants WHERE subaccount_id % ? = ?`, []any{k, j}},
		{`INSERT INTO object_grants (subaccount_id, imei) SELECT a.id, o.imei FROM accounts a JOIN objects o ON o.account_id = a.manager_id
		  WHERE a.type = 'subaccount' AND (a.id + o.id) % ? = ? ON CONFLICT DO NOTHING`, []any{k, j}},
		{`UPDATE accounts SET manager_id = ? WHERE type = 'user' AND id % ? = ?`, []any{manager.id, k, j}},
	}
	for _, st := range stmts {
		if _, err := db.ExecContext(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
	}
}

// concurrentWrites creates and deletes rows in one account from several
// goroutines at once, one statement per transaction (as creates do).
func concurrentWrites(t *testing.T, ctx context.Context, db bun.IDB, w *world) {
	t.Helper()
	user := w.byType[tenancy.User][0]
	imei := w.devices[user.id][0]
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				stmts := []struct {
					sql  string
					args []any
				}{
					{`INSERT INTO passengers (account_id, passenger_name) VALUES (?, ?)`, []any{user.id, fmt.Sprintf("concurrent %d-%d", g, i)}},
					{`INSERT INTO services (account_id, imei, name) VALUES (?, ?, ?)`, []any{user.id, imei, fmt.Sprintf("concurrent %d-%d", g, i)}},
					{`INSERT INTO reports (account_id, name, imei) VALUES (?, ?, ?)`, []any{user.id, fmt.Sprintf("concurrent %d-%d", g, i), pgdialect.Array([]string{imei})}},
				}
				if i%3 == 2 {
					stmts = append(stmts, struct {
						sql  string
						args []any
					}{`DELETE FROM passengers WHERE passenger_name = ?`, []any{fmt.Sprintf("concurrent %d-%d", g, i-1)}})
				}
				for _, st := range stmts {
					if _, err := db.ExecContext(ctx, st.sql, st.args...); err != nil {
						errs <- fmt.Errorf("%s: %w", st.sql, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCountedTotalsIsolation checks that one tenant's writes never move
// another tenant's total: rows created in one user's account raise that
// user's totals by exactly their number and leave every account of
// another manager's tree where it was.
func TestCountedTotalsIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(countersSeed+1, countersSeed+1))
	w := buildWorld(t, db, r)
	// b: a user of one manager; the others: every account of another
	// manager's tree.
	var b worldAccount
	for _, u := range w.byType[tenancy.User] {
		if w.byID[u.managerID].typ == tenancy.Manager {
			b = u
			break
		}
	}
	var others []policy.Input
	for _, in := range countPrincipals(w, r) {
		a, known := w.byID[in.Account.ID]
		if !known || a.typ == tenancy.Admin || a.id == b.id || a.id == b.managerID || a.managerID == b.id || a.managerID == b.managerID {
			continue
		}
		if m, ok := w.byID[a.managerID]; ok && (m.id == b.managerID || m.managerID == b.managerID) {
			continue
		}
		others = append(others, in)
	}
	if len(others) == 0 {
		t.Fatal("no principal outside the tenant")
	}
	self := countPrincipals(w, r)
	self = slices.DeleteFunc(self, func(in policy.Input) bool { return in.Account.ID != b.id || !in.Account.Active })
	totals := func(ins []policy.Input) map[string]int64 {
		out := map[string]int64{}
		for i, in := range ins {
			for _, resource := range storage.Resources() {
				scope, err := e.Scope(ctx, in, resource)
				if err != nil {
					t.Fatal(err)
				}
				// the total a list shows: the counters', or counted rows for
				// a scope without a counter form
				total, ok, rows, err := s.CountedTotal(ctx, scope)
				if err != nil {
					t.Fatalf("%s for %s: %v", resource, principalString(in), err)
				}
				if !ok {
					total = rows
				}
				out[fmt.Sprintf("%d/%s", i, resource)] = total
			}
		}
		return out
	}
	beforeOthers, beforeSelf := totals(others), totals(self)
	imei := w.devices[b.id][0]
	for i := range 25 {
		for _, st := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO passengers (account_id, passenger_name) VALUES (?, ?)`, []any{b.id, fmt.Sprintf("isolation %d", i)}},
			{`INSERT INTO services (account_id, imei, name) VALUES (?, ?, ?)`, []any{b.id, imei, fmt.Sprintf("isolation %d", i)}},
			{`INSERT INTO reports (account_id, name, imei) VALUES (?, ?, ?)`, []any{b.id, fmt.Sprintf("isolation %d", i), pgdialect.Array([]string{imei})}},
			{`INSERT INTO events (account_id, name, imei) VALUES (?, ?, ?)`, []any{b.id, fmt.Sprintf("isolation %d", i), pgdialect.Array([]string{imei})}},
			{`INSERT INTO objects (account_id, imei) VALUES (?, ?)`, []any{b.id, fmt.Sprintf("isolation-%d", i)}},
		} {
			if _, err := db.ExecContext(ctx, st.sql, st.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	afterOthers, afterSelf := totals(others), totals(self)
	for k, v := range beforeOthers {
		if afterOthers[k] != v {
			t.Errorf("another tenant's total %s moved from %d to %d", k, v, afterOthers[k])
		}
	}
	for k, v := range beforeSelf {
		if afterSelf[k] != v+25 {
			t.Errorf("the tenant's own total %s went from %d to %d, want +25", k, v, afterSelf[k])
		}
	}
}

// TestCountedTotalsNeedEveryTrigger proves that the differential check
// can fail: with any one of the counting triggers dropped (in a
// transaction that is rolled back), the statement it covers leaves a total
// that the check reports.
func TestCountedTotalsNeedEveryTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(countersSeed+2, countersSeed+2))
	w := buildWorld(t, db, r)
	principals := countPrincipals(w, r)
	ops := map[string]map[string]string{
		"services": {
			"insert":   `INSERT INTO services (account_id, imei, name) SELECT account_id, imei, name || ' dup' FROM services`,
			"update":   `UPDATE services s SET account_id = o.account_id, imei = o.imei FROM (SELECT account_id, imei FROM objects ORDER BY id LIMIT 1) o WHERE s.account_id <> o.account_id`,
			"delete":   `DELETE FROM services WHERE service_id % 2 = 0`,
			"truncate": `TRUNCATE services`,
		},
		"reports": {
			"insert":   `INSERT INTO reports (account_id, name, imei) SELECT account_id, name || ' dup', imei FROM reports`,
			"update":   `UPDATE reports SET account_id = (SELECT min(id) FROM accounts) WHERE account_id <> (SELECT min(id) FROM accounts)`,
			"delete":   `DELETE FROM reports WHERE report_id % 2 = 0`,
			"truncate": `TRUNCATE reports`,
		},
		"events": {
			"insert":   `INSERT INTO events (account_id, name, imei) SELECT account_id, name || ' dup', imei FROM events`,
			"update":   `UPDATE events SET account_id = (SELECT min(id) FROM accounts) WHERE account_id <> (SELECT min(id) FROM accounts)`,
			"delete":   `DELETE FROM events WHERE event_id % 2 = 0`,
			"truncate": `TRUNCATE events`,
		},
		"passengers": {
			"insert":   `INSERT INTO passengers (account_id, passenger_name) SELECT account_id, 'dup' FROM passengers`,
			"update":   `UPDATE passengers SET account_id = (SELECT min(id) FROM accounts) WHERE account_id <> (SELECT min(id) FROM accounts)`,
			"delete":   `DELETE FROM passengers WHERE passenger_id % 2 = 0`,
			"truncate": `TRUNCATE passengers`,
		},
		"objects": {
			"insert": `INSERT INTO objects (imei, account_id) SELECT imei || ' dup', account_id FROM objects`,
			"update": `DELETE FROM services WHERE imei IN (SELECT imei FROM objects WHERE id % 2 = 0);
				UPDATE objects o SET account_id = (SELECT min(id) FROM accounts) WHERE id % 2 = 0`,
			"delete":   `DELETE FROM objects o WHERE NOT EXISTS (SELECT 1 FROM services s WHERE s.imei = o.imei)`,
			"truncate": `TRUNCATE objects CASCADE`,
		},
	}
	for _, table := range storage.CountedTables() {
		for op, stmt := range ops[table] {
			t.Run(table+"_"+op, func(t *testing.T) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck // the point: nothing stays
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("DROP TRIGGER %s_count_%s ON %s", table, op, table)); err != nil {
					t.Fatal(err)
				}
				for _, st := range strings.Split(stmt, ";") {
					if _, err := tx.ExecContext(ctx, st); err != nil {
						t.Fatalf("%s: %v", st, err)
					}
				}
				bad, _, err := totalsMismatch(ctx, storage.NewStore(tx), e, principals)
				if err != nil {
					t.Fatal(err)
				}
				if len(bad) == 0 {
					t.Fatalf("without %s_count_%s, %q left every total right: the check cannot see a missing trigger", table, op, stmt)
				}
			})
		}
	}
	var triggers []string
	if err := db.NewRaw(`SELECT tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = 'count_rows' ORDER BY 1`).Scan(ctx, &triggers); err != nil {
		t.Fatal(err)
	}
	var want []string
	for table, byOp := range ops {
		for op := range byOp {
			want = append(want, table+"_count_"+op)
		}
	}
	slices.Sort(want)
	if !slices.Equal(triggers, want) {
		t.Errorf("counting triggers %v, the tables and operations covered here %v", triggers, want)
	}
}

// TestListTotalFromCounters checks which lists take their total from the
// counters: an unfiltered full page does (a counter shifted inside a
// rolled-back transaction shows in it), a filtered or searched list and a
// scope through device grants count rows (the shift does not show).
func TestListTotalFromCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(countersSeed+3, countersSeed+3))
	w := buildWorld(t, db, r)
	odo, ok := storage.Services.Field("odo")
	if !ok {
		t.Fatal("services has no odo field")
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // the shifted counters must not stay
	s := storage.NewStore(tx)
	var want map[string]int64
	rows := func(in policy.Input) map[string]int64 {
		scope, err := e.Scope(ctx, in, "services")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for name, req := range map[string]storage.ListRequest{
			"plain":    {Page: 1, PerPage: 1},
			"filtered": {Page: 1, PerPage: 1, Filters: []storage.Filter{{Field: odo, Value: false}}},
			"search":   {Page: 1, PerPage: 1, Search: "1"},
		} {
			page, err := storage.List(ctx, s, scope, storage.Services, req)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = page.Total
		}
		return out
	}
	principals := map[string]policy.Input{}
	for _, in := range countPrincipals(w, r) {
		if in.Account.Active && len(in.Account.Privileges) == 2 {
			principals[in.Account.Type] = in
		}
	}
	before := map[string]map[string]int64{}
	for typ, in := range principals {
		before[typ] = rows(in)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE account_row_counts SET n = n + 1000 WHERE resource = 'services'`); err != nil {
		t.Fatal(err)
	}
	for typ, in := range principals {
		want = before[typ]
		got := rows(in)
		for name, n := range got {
			shifted := n != want[name]
			if expect := name == "plain" && typ != string(tenancy.Subaccount); shifted != expect || want[name] < 2 {
				t.Errorf("%s %s list: total %d, %d before the counters moved (from the counters: %v; a full first page needs 2 rows or more)",
					typ, name, n, want[name], expect)
			}
		}
	}
	if len(principals) != 4 {
		t.Fatalf("principals of %d types, want 4", len(principals))
	}
}

// TestCountedTotalsAfterGenerate checks the counters after synth.Generate,
// which suspends the counting triggers during its COPY and recounts at the
// end: the totals agree with count(*) for a sample of every account type,
// the triggers are enabled again, and a later insert is counted.
func TestCountedTotalsAfterGenerate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	e := newEngine(t)
	cfg, err := synth.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Today = generateToday
	if _, err := synth.Generate(ctx, db.DB, cfg); err != nil {
		t.Fatal(err)
	}
	var usernames []string
	if err := db.NewRaw(`SELECT username FROM accounts WHERE id IN (1, 2, 3, 6) OR id % 23 = 0 ORDER BY id`).Scan(ctx, &usernames); err != nil {
		t.Fatal(err)
	}
	var principals []policy.Input
	for _, name := range usernames {
		principals = append(principals, policy.NewInput(principalOf(t, s, name), "GET", "/services", generateToday))
	}
	check := func(stage string) {
		t.Helper()
		bad, agreed, err := totalsMismatch(ctx, s, e, principals)
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) > 0 || agreed == 0 {
			t.Fatalf("%s: %d totals agree, mismatches: %v", stage, agreed, bad)
		}
	}
	check("generated")
	var disabled []string
	if err := db.NewRaw(`SELECT tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = 'count_rows' AND t.tgenabled <> 'O'`).Scan(ctx, &disabled); err != nil {
		t.Fatal(err)
	}
	if len(disabled) > 0 {
		t.Fatalf("counting triggers left disabled by generate: %v", disabled)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO passengers (account_id, passenger_name) SELECT account_id, 'after generate' FROM passengers WHERE passenger_id % 7 = 0`); err != nil {
		t.Fatal(err)
	}
	check("inserted")
}
