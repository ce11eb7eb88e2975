package storage_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/synth"
	"github.com/fleetapi/fleetapi/tenancy"
)

const countersSeed = 20261210

// countedDescriptors returns the descriptors of the counted resources
// (declared with the option counted), whose tables the counter tests
// write: the statements below are derived from them, so a counted
// resource is in these tests without code here.
func countedDescriptors(t *testing.T) []*storage.Descriptor {
	t.Helper()
	var out []*storage.Descriptor
	for _, d := range storage.Descriptors() {
		if d.Counted() {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		t.Fatal("no counted resource: the counter tests check nothing")
	}
	return out
}

// inputOf is the input of a principal of account a with every token
// permission, never expired.
func inputOf(a worldAccount, active bool, privs []string) policy.Input {
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	p := tenancy.Principal{
		Token:   tenancy.Token{ID: 1, AccountID: a.id, Permissions: []string{"*"}},
		Account: tenancy.Account{ID: a.id, Type: a.typ, ManagerID: a.managerID, Active: active, Privileges: privs},
	}
	return policy.NewInput(p, "GET", "/services", today)
}

// countPrincipals are the principals whose totals the counter tests
// compare: every account of the world as itself (subaccounts with both,
// one and no privileges; every type active), an inactive one of each type,
// and random principals (random type, activity, expiry, privileges, now
// and then an account that does not exist).
func countPrincipals(w *world, r *rand.Rand) []policy.Input {
	var out []policy.Input
	for _, a := range w.accounts {
		out = append(out, inputOf(a, true, []string{"reports", "event_notifications"}))
		if a.typ == tenancy.Subaccount {
			out = append(out, inputOf(a, true, []string{"reports"}), inputOf(a, true, []string{"event_notifications"}), inputOf(a, true, []string{}))
		}
	}
	for _, typ := range []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount} {
		out = append(out, inputOf(w.byType[typ][0], false, nil))
	}
	for range 60 {
		out = append(out, w.randomPrincipal(r))
	}
	return out
}

// freshRows inserts n new rows of d in one statement, built from the
// descriptor (genericRow) with r, and returns their ids. With owner 0 each
// row has a random owner of the world (a row naming one device: a device
// of the world and its owner); otherwise every row is owner's, and a row
// naming one device names device, which owner must own. A row of the
// devices table is a new device, its id made of tag (unique per call).
// Fresh rows of other tables name only the world's own devices.
func (w *world) freshRows(ctx context.Context, db bun.IDB, r *rand.Rand, d *storage.Descriptor, tag string, n int, owner int64, device string) ([]int64, error) {
	table := db.Dialect().Tables().Get(d.ModelType())
	rows := reflect.MakeSlice(reflect.SliceOf(d.ModelType()), n, n)
	for i := range n {
		o, dev := owner, device
		if owner == 0 {
			o, dev = w.rowOwnerAndDevice(r, table)
		}
		if d.Table() == w.devicesTable {
			dev = fmt.Sprintf("%s-%d", tag, i)
		}
		w.genericRow(r, d, table, rows.Index(i), 1_000_000+int(w.fresh.Add(1)), o, dev)
	}
	ptr := reflect.New(rows.Type())
	ptr.Elem().Set(rows)
	if _, err := db.NewInsert().Model(ptr.Interface()).Exec(ctx); err != nil {
		return nil, fmt.Errorf("insert %d fresh %s rows: %w", n, d.Resource(), err)
	}
	ids := make([]int64, n)
	for i := range n {
		ids[i] = table.PKs[0].Value(rows.Index(i)).Int()
	}
	return ids, nil
}

// mustFreshRows is freshRows for the test's goroutine.
func (w *world) mustFreshRows(t *testing.T, ctx context.Context, db bun.IDB, r *rand.Rand, d *storage.Descriptor, tag string, n int, owner int64, device string) []int64 {
	t.Helper()
	ids, err := w.freshRows(ctx, db, r, d, tag, n, owner, device)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// newDevice stores a new device of owner and returns its id: a test that
// writes rows naming a device of an account makes the device it needs.
func newDevice(t *testing.T, ctx context.Context, db bun.IDB, owner int64, imei string) string {
	t.Helper()
	if _, err := db.NewInsert().Model(&storage.Object{IMEI: imei, AccountID: owner, Name: "Made for " + imei}).Exec(ctx); err != nil {
		t.Fatalf("device %s: %v", imei, err)
	}
	return imei
}

// referenced reports whether a foreign key references table: its rows
// that the world built may be named by other rows (the devices: services
// and grants name them), so the counter tests move and delete only the
// rows they added to it.
func referenced(t *testing.T, ctx context.Context, db bun.IDB, table string) bool {
	t.Helper()
	var yes bool
	if err := db.NewRaw(`SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE contype = 'f' AND confrelid = ?::regclass)`, table).Scan(ctx, &yes); err != nil {
		t.Fatal(err)
	}
	return yes
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
// one account from several goroutines, after TRUNCATE, and after every
// counted table is counted again from its rows (count_table, the
// backfill). The statements are derived from the counted descriptors,
// each resource's from a random stream of its own (resourceRand). The
// triggers are table-level, so the application's writes, import and
// generate (COPY fires the INSERT triggers) take the same paths as these
// statements.
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
		for _, d := range countedDescriptors(t) {
			w.mutateCounted(t, ctx, db, resourceRand(countersSeed+uint64(round), d.Resource()), d, round)
		}
		mutateTree(t, ctx, db, r, w)
		check(fmt.Sprintf("round %d", round))
	}
	w.concurrentWrites(t, ctx, db)
	check("concurrent writes")
	// TRUNCATE of every counted table that no foreign key references, in
	// one statement, then new rows in some of them.
	var truncated []string
	for _, d := range countedDescriptors(t) {
		if !referenced(t, ctx, db, d.Table()) {
			truncated = append(truncated, d.Table())
		}
	}
	if _, err := db.ExecContext(ctx, `TRUNCATE `+strings.Join(truncated, ", ")); err != nil {
		t.Fatalf("truncate %v: %v", truncated, err)
	}
	for _, d := range countedDescriptors(t) {
		if rr := resourceRand(countersSeed+100, d.Resource()); slices.Contains(truncated, d.Table()) && rr.IntN(2) == 0 {
			w.mustFreshRows(t, ctx, db, rr, d, "after-truncate", 20+rr.IntN(20), 0, "")
		}
	}
	check("truncate")
	// The backfill: count_table, applied to tables that hold rows and
	// counters in every stripe, counts them again.
	for _, table := range storage.CountedTables() {
		if _, err := db.ExecContext(ctx, `SELECT count_table(?::regclass)`, table); err != nil {
			t.Fatalf("count_table(%s): %v", table, err)
		}
	}
	var stripes int
	if err := db.NewRaw(`SELECT count(DISTINCT slot) FROM account_row_counts`).Scan(ctx, &stripes); err != nil || stripes != 1 {
		t.Fatalf("after the backfill: %d stripes (%v), want 1", stripes, err)
	}
	check("backfill")
}

// mutateCounted applies one round of random writes to the counted
// resource d, drawn from r, with the kinds of statement the counters must
// follow: a multi-row insert into many accounts and devices, an update
// that moves rows to another account (and device), one that moves rows
// between devices of their account, one that moves nothing, and a delete.
// In a table that foreign keys reference (the devices) only the rows the
// test added move or go.
func (w *world) mutateCounted(t *testing.T, ctx context.Context, db bun.IDB, r *rand.Rand, d *storage.Descriptor, round int) {
	t.Helper()
	w.mustFreshRows(t, ctx, db, r, d, fmt.Sprintf("round%d", round), 10+r.IntN(30), 0, "")
	k := 3 + r.IntN(5)
	j := r.IntN(k)
	id, table := bun.Ident(d.ID().Name), bun.Ident(d.Table())
	rows := func(m, rest int) (string, []any) {
		where, args := `? % ? = ?`, []any{id, m, rest}
		if referenced(t, ctx, db, d.Table()) {
			where, args = where+` AND ? > ?`, append(args, id, w.built[d.Table()])
		}
		return where, args
	}
	type stmt struct {
		sql  string
		args []any
	}
	var stmts []stmt
	kind := w.imeiKind[string(d.Resource())]
	// to another account (and, naming one device, to a device of it)
	where, args := rows(k, (j+1)%k)
	if kind == imeiScalar && d.Table() != w.devicesTable {
		o := w.objects[r.IntN(len(w.objects))]
		stmts = append(stmts, stmt{`UPDATE ? SET "account_id" = ?, "imei" = ? WHERE ` + where, append([]any{table, o.AccountID, o.IMEI}, args...)})
	} else {
		stmts = append(stmts, stmt{`UPDATE ? SET "account_id" = ? WHERE ` + where, append([]any{table, w.accounts[r.IntN(len(w.accounts))].id}, args...)})
	}
	// between devices, in the same account
	where, args = rows(k, (j+2)%k)
	switch {
	case kind == imeiList:
		users := w.byType[tenancy.User]
		devices := w.deviceList(r, users[r.IntN(len(users))].id)
		stmts = append(stmts, stmt{`UPDATE ? SET "imei" = ? WHERE ` + where, append([]any{table, pgdialect.Array([]string(devices))}, args...)})
	case kind == imeiScalar && d.Table() != w.devicesTable:
		stmts = append(stmts, stmt{`UPDATE ? AS x SET "imei" = (SELECT o.imei FROM ? AS o WHERE o.account_id = x.account_id AND o.id <= ?
			ORDER BY md5(o.imei || x.? || ?) LIMIT 1) WHERE ` + where,
			append([]any{table, bun.Ident(w.devicesTable), w.built[w.devicesTable], id, round}, args...)})
	}
	// nothing moves
	where, args = rows(k, (j+3)%k)
	stmts = append(stmts, stmt{`UPDATE ? SET "account_id" = "account_id" WHERE ` + where, append([]any{table}, args...)})
	// a delete
	where, args = rows(k+1, j)
	stmts = append(stmts, stmt{`DELETE FROM ? WHERE ` + where, append([]any{table}, args...)})
	for _, st := range stmts {
		if _, err := db.ExecContext(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("%s %v: %v", st.sql, st.args, err)
		}
	}
}

// mutateTree changes what a scope reads at query time: grants and the
// account tree.
func mutateTree(t *testing.T, ctx context.Context, db bun.IDB, r *rand.Rand, w *world) {
	t.Helper()
	k := 3 + r.IntN(5)
	j := r.IntN(k)
	managers := w.byType[tenancy.Manager]
	manager := managers[r.IntN(len(managers))]
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM object_grants WHERE subaccount_id % ? = ?`, []any{k, j}},
		{`INSERT INTO object_grants (subaccount_id, imei) SELECT a.id, o.imei FROM accounts a JOIN objects o ON o.account_id = a.manager_id
		  WHERE a.type = 'subaccount' AND (a.id + o.id) % ? = ? ON CONFLICT DO NOTHING`, []any{k, j}},
		{`UPDATE accounts SET manager_id = ? WHERE type = 'user' AND id % ? = ?`, []any{manager.id, k, j}},
	} {
		if _, err := db.ExecContext(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("%s: %v", st.sql, err)
		}
	}
}

// concurrentWrites creates and deletes rows of every counted resource in
// one user's account from several goroutines at once, one statement per
// transaction (as creates do); rows naming one device name a device made
// here for the user.
func (w *world) concurrentWrites(t *testing.T, ctx context.Context, db bun.IDB) {
	t.Helper()
	user := w.byType[tenancy.User][0]
	device := newDevice(t, ctx, db, user.id, "concurrent-writers")
	counted := countedDescriptors(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			streams := map[*storage.Descriptor]*rand.Rand{}
			last := map[*storage.Descriptor]int64{}
			for _, d := range counted {
				streams[d] = resourceRand(countersSeed+1000+uint64(g), d.Resource())
			}
			for i := range 30 {
				for _, d := range counted {
					ids, err := w.freshRows(ctx, db, streams[d], d, fmt.Sprintf("concurrent-%d-%d", g, i), 1, user.id, device)
					if err == nil && i%3 == 2 {
						_, err = db.NewDelete().TableExpr("?", bun.Ident(d.Table())).Where("? = ?", bun.Ident(d.ID().Name), last[d]).Exec(ctx)
					}
					if err != nil {
						errs <- err
						return
					}
					last[d] = ids[0]
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
// another manager's tree where it was. The rows are made from the counted
// descriptors.
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
	// b itself, active and not expired: it sees every row of its account.
	self := []policy.Input{inputOf(b, true, []string{"reports", "event_notifications"})}
	// The counted resources only: those are the ones the rows below are
	// made for (a resource declared without counted counts its rows).
	totals := func(ins []policy.Input) map[string]int64 {
		out := map[string]int64{}
		for i, in := range ins {
			for _, d := range countedDescriptors(t) {
				resource := d.Resource()
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
	// The device the new rows name: b's, made before the totals are taken.
	device := newDevice(t, ctx, db, b.id, "isolation-device")
	beforeOthers, beforeSelf := totals(others), totals(self)
	for _, d := range countedDescriptors(t) {
		rr := resourceRand(countersSeed+1, d.Resource())
		for i := range 25 {
			w.mustFreshRows(t, ctx, db, rr, d, fmt.Sprintf("isolation-%d", i), 1, b.id, device)
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
// can fail: with any one of the counting triggers of any counted resource
// dropped (in a transaction that is rolled back), the statement it covers
// leaves a total that the check reports. The statements are derived from
// the descriptor: new rows of one user (insert), moved to another user
// (update), deleted (delete), TRUNCATE … CASCADE (truncate).
func TestCountedTotalsNeedEveryTrigger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(countersSeed+2, countersSeed+2))
	w := buildWorld(t, db, r)
	principals := countPrincipals(w, r)
	// The two users whose totals the statements move: every account of the
	// world is among the principals, as itself.
	from, to := w.byType[tenancy.User][0], w.byType[tenancy.User][1]
	for _, d := range countedDescriptors(t) {
		for _, op := range countingOps {
			t.Run(d.Table()+"_"+op, func(t *testing.T) {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck // the point: nothing stays
				fromDevice := newDevice(t, ctx, tx, from.id, "trigger-from")
				toDevice := newDevice(t, ctx, tx, to.id, "trigger-to")
				if _, err := tx.ExecContext(ctx, "DROP TRIGGER ? ON ?", bun.Ident(d.Table()+"_count_"+op), bun.Ident(d.Table())); err != nil {
					t.Fatal(err)
				}
				rr := resourceRand(countersSeed+2, d.Resource())
				var ids []int64
				if op != "truncate" {
					ids = w.mustFreshRows(t, ctx, tx, rr, d, "trigger-"+op, 5, from.id, fromDevice)
				}
				table, id := bun.Ident(d.Table()), bun.Ident(d.ID().Name)
				var stmt string
				var args []any
				switch op {
				case "update":
					stmt, args = `UPDATE ? SET "account_id" = ? WHERE ? IN (?)`, []any{table, to.id, id, bun.List(ids)}
					if w.imeiKind[string(d.Resource())] == imeiScalar && d.Table() != w.devicesTable {
						stmt, args = `UPDATE ? SET "account_id" = ?, "imei" = ? WHERE ? IN (?)`, []any{table, to.id, toDevice, id, bun.List(ids)}
					}
				case "delete":
					stmt, args = `DELETE FROM ? WHERE ? IN (?)`, []any{table, id, bun.List(ids)}
				case "truncate":
					stmt, args = `TRUNCATE ? CASCADE`, []any{table}
				}
				if stmt != "" {
					if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
				}
				bad, _, err := totalsMismatch(ctx, storage.NewStore(tx), e, principals)
				if err != nil {
					t.Fatal(err)
				}
				if len(bad) == 0 {
					t.Fatalf("without %s_count_%s, the %s left every total right: the check cannot see a missing trigger", d.Table(), op, op)
				}
			})
		}
	}
}

// countingOps are the statements each counted table has a counting
// trigger for (<table>_count_<op>, installed by count_table).
var countingOps = []string{"insert", "update", "delete", "truncate"}

// TestCountedTablesAreTheDeclared checks that the migrations count exactly
// the resources declared counted: the tables carrying triggers of
// count_rows() are the counted descriptors', each with the four triggers
// that count_table installs (a counted resource whose migration does not
// call count_table fails here, and so does a table counted by a migration
// but not declared counted, whose lists would count rows), and the
// triggers migration 20261210000002 wrote by hand are the ones count_table
// makes.
func TestCountedTablesAreTheDeclared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	definitions := func(db bun.IDB) map[string]string {
		t.Helper()
		var rows []struct {
			Name string `bun:"tgname"`
			Def  string `bun:"def"`
		}
		if err := db.NewRaw(`SELECT t.tgname, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
			WHERE p.proname = 'count_rows' ORDER BY 1`).Scan(ctx, &rows); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, r := range rows {
			out[r.Name] = r.Def
		}
		return out
	}
	migrated := definitions(db)
	var got, want []string
	for name := range migrated {
		got = append(got, name)
	}
	for _, table := range storage.CountedTables() {
		for _, op := range countingOps {
			want = append(want, table+"_count_"+op)
		}
	}
	var missing, extra []string
	for _, name := range want {
		if !slices.Contains(got, name) {
			missing = append(missing, name)
		}
	}
	for _, name := range got {
		if !slices.Contains(want, name) {
			extra = append(extra, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("counted descriptors without their counting triggers after the migrations: %v; a resource declared counted "+
			"needs SELECT count_table('<table>'); in its migration", missing)
	}
	if len(extra) > 0 {
		t.Errorf("counting triggers on tables not declared counted: %v; declare the resource with the option counted "+
			"(declare[T](counted)), or remove them with SELECT uncount_table('<table>'); in a migration", extra)
	}
	if t.Failed() {
		t.FailNow()
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // only a comparison
	for _, table := range storage.CountedTables() {
		if _, err := tx.ExecContext(ctx, `SELECT count_table(?::regclass)`, table); err != nil {
			t.Fatalf("count_table(%s): %v", table, err)
		}
	}
	if made := definitions(tx); !maps.Equal(made, migrated) {
		t.Errorf("count_table makes the triggers\n%v\nthe migrations made\n%v", made, migrated)
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
	// What the lists need, made here: a user of a manager, a subaccount of
	// it granted a device of the user, and on that device three services
	// that the filtered and the searched list match; the principals, one of
	// each type, active, never expired, with every privilege, see them.
	var user worldAccount
	for _, u := range w.byType[tenancy.User] {
		if w.byID[u.managerID].typ == tenancy.Manager {
			user = u
			break
		}
	}
	sub := &storage.Account{Username: "counted-lists-sub", Type: tenancy.Subaccount, ManagerID: &user.id, Active: true}
	if _, err := db.NewInsert().Model(sub).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	device := newDevice(t, ctx, db, user.id, "counted-lists-device")
	if _, err := db.NewInsert().Model(&storage.ObjectGrant{SubaccountID: sub.ID, IMEI: device}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := db.NewInsert().Model(&storage.Service{AccountID: user.id, IMEI: device, Name: fmt.Sprintf("counted list %d1", i), Odo: false}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	both := []string{"reports", "event_notifications"}
	principals := map[string]policy.Input{
		string(tenancy.Admin):      inputOf(w.byType[tenancy.Admin][0], true, both),
		string(tenancy.Manager):    inputOf(w.byID[user.managerID], true, both),
		string(tenancy.User):       inputOf(user, true, both),
		string(tenancy.Subaccount): inputOf(worldAccount{id: sub.ID, typ: tenancy.Subaccount, managerID: user.id}, true, both),
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // the shifted counters must not stay
	s := storage.NewStore(tx)
	var want map[string]int64
	rows := func(in policy.Input) map[string]int64 {
		scope, err := e.Scope(ctx, in, storage.Services.Resource())
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
	before := map[string]map[string]int64{}
	for typ, in := range principals {
		before[typ] = rows(in)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE account_row_counts SET n = n + 1000 WHERE resource = ?`, storage.Services.Table()); err != nil {
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
