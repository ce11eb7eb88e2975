package storage_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

const totalsSeed = 20270110

// totalsWorld is a small fleet for the kept totals' tests: an admin, two
// managers, users under them, each user with devices carrying services
// whose names the searches match.
type totalsWorld struct {
	admin    worldAccount
	managers []worldAccount
	users    []worldAccount
	// devices holds each user's devices (imei).
	devices map[int64][]string
	n       int
}

// totalsTerms are the names of the services (with a suffix) and the
// searches: "replacement" matches two of them, "e" every one.
var totalsTerms = []string{"Oil change", "Belt replacement", "Tyre replacement", "Brake check"}

func (w *totalsWorld) account(t *testing.T, ctx context.Context, db bun.IDB, typ tenancy.AccountType, manager int64) worldAccount {
	t.Helper()
	w.n++
	a := &storage.Account{Username: fmt.Sprintf("totals-%s-%d", typ, w.n), Type: typ, Active: true}
	if manager != 0 {
		a.ManagerID = &manager
	}
	if _, err := db.NewInsert().Model(a).Exec(ctx); err != nil {
		t.Fatalf("account %s: %v", a.Username, err)
	}
	return worldAccount{id: a.ID, typ: typ, managerID: manager}
}

// user adds a user under manager with two devices and a few services.
func (w *totalsWorld) user(t *testing.T, ctx context.Context, db bun.IDB, r *rand.Rand, manager int64) {
	t.Helper()
	u := w.account(t, ctx, db, tenancy.User, manager)
	w.users = append(w.users, u)
	for i := range 2 {
		imei := newDevice(t, ctx, db, u.id, fmt.Sprintf("totals-%d-%d", u.id, i))
		w.devices[u.id] = append(w.devices[u.id], imei)
		for range 1 + r.IntN(4) {
			w.service(t, ctx, db, r, u.id, imei)
		}
	}
}

func (w *totalsWorld) service(t *testing.T, ctx context.Context, db bun.IDB, r *rand.Rand, account int64, imei string) {
	t.Helper()
	w.n++
	name := fmt.Sprintf("%s %d", totalsTerms[r.IntN(len(totalsTerms))], w.n)
	if _, err := db.NewInsert().Model(&storage.Service{AccountID: account, IMEI: imei, Name: name, Odo: r.IntN(2) == 0,
		OdoInterval: 1000, OdoLast: r.IntN(5000)}).Exec(ctx); err != nil {
		t.Fatalf("service %s: %v", name, err)
	}
}

func newTotalsWorld(t *testing.T, ctx context.Context, db bun.IDB, r *rand.Rand) *totalsWorld {
	t.Helper()
	w := &totalsWorld{devices: map[int64][]string{}}
	w.admin = w.account(t, ctx, db, tenancy.Admin, 0)
	for range 2 {
		w.managers = append(w.managers, w.account(t, ctx, db, tenancy.Manager, w.admin.id))
	}
	for i := range 5 {
		w.user(t, ctx, db, r, w.managers[i%2].id)
	}
	return w
}

// principals are the admin, the managers and the users, each with the
// row scope of services the policy gives it now (an account moved to
// another manager keeps its scope: the scope names the account, the tree
// is read at query time).
func (w *totalsWorld) principals() []worldAccount {
	return slices.Concat([]worldAccount{w.admin}, w.managers, w.users)
}

// freshTotal counts the rows req selects in scope without any kept total:
// a List on a Store over a transaction, where totals are never kept, with
// one row per page (a first page that is full counts).
func freshTotal(t *testing.T, ctx context.Context, db *storagetest.DB, scope policy.Scope, req storage.ListRequest) int64 {
	t.Helper()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // a read
	req.Page, req.PerPage = 1, 1
	page, err := storage.List(ctx, storage.NewStore(tx), scope, storage.Services, req)
	if err != nil {
		t.Fatal(err)
	}
	return page.Total
}

// freshPage returns the page req selects as a Store inside a transaction
// reads it: nothing kept, every total counted.
func freshPage(t *testing.T, ctx context.Context, db *storagetest.DB, scope policy.Scope, req storage.ListRequest) storage.Page[storage.Service] {
	t.Helper()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // a read
	page, err := storage.List(ctx, storage.NewStore(tx), scope, storage.Services, req)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// freshAll returns every row req's filters and search select in scope, in
// id order, as a Store inside a transaction reads them: page after page of
// storage.MaxPerPage.
func freshAll(t *testing.T, ctx context.Context, db *storagetest.DB, scope policy.Scope, req storage.ListRequest) []storage.Service {
	t.Helper()
	var all []storage.Service
	for req.Page, req.PerPage = 1, storage.MaxPerPage; ; req.Page++ {
		page := freshPage(t, ctx, db, scope, req)
		all = append(all, page.Items...)
		if len(page.Items) < req.PerPage {
			return all
		}
	}
}

func idsOf(items []storage.Service) []int64 {
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.ServiceID
	}
	return ids
}

// TestKeptTotalsAgreeWithCount is the differential test of the kept
// totals (totals.go): random writes (services created, deleted, renamed,
// their odo filter flipped; objects' odometers updated, which flips the
// maintained meter_due of their services; devices moved to another user;
// users moved to the other manager; a user erased and a new one created)
// interleaved with paged searched and filtered lists of every principal,
// in both directions, every total compared with a fresh count and every
// page with the page of a Store that keeps nothing, both as List reads it
// and read by key from the ids kept with the request's total.
// Totals must be both reused (pages after the first, no write in the
// scope) and counted again.
func TestKeptTotalsAgreeWithCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(totalsSeed, totalsSeed))
	w := newTotalsWorld(t, ctx, db, r)
	odo, ok := storage.Services.Field("odo")
	if !ok {
		t.Fatal("services has no odo field")
	}
	name, ok := storage.Services.Field("name")
	if !ok {
		t.Fatal("services has no name field")
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	randomService := func() (int64, bool) {
		var ids []int64
		if err := db.NewRaw(`SELECT service_id FROM services ORDER BY service_id`).Scan(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		if len(ids) == 0 {
			return 0, false
		}
		return ids[r.IntN(len(ids))], true
	}
	writes := []struct {
		name string
		do   func()
	}{
		{"create", func() {
			u := w.users[r.IntN(len(w.users))]
			w.service(t, ctx, db, r, u.id, w.devices[u.id][r.IntN(len(w.devices[u.id]))])
		}},
		{"delete", func() {
			if id, ok := randomService(); ok {
				exec(`DELETE FROM services WHERE service_id = ?`, id)
			}
		}},
		{"rename", func() {
			if id, ok := randomService(); ok {
				exec(`UPDATE services SET name = ? || ' ' || service_id WHERE service_id = ?`, totalsTerms[r.IntN(len(totalsTerms))], id)
			}
		}},
		{"odo filter", func() {
			if id, ok := randomService(); ok {
				exec(`UPDATE services SET odo = NOT odo WHERE service_id = ?`, id)
			}
		}},
		{"odometer", func() {
			u := w.users[r.IntN(len(w.users))]
			exec(`UPDATE objects SET odometer = ? WHERE imei = ?`, r.IntN(10000), w.devices[u.id][r.IntN(len(w.devices[u.id]))])
		}},
		{"device move", func() {
			from, to := w.users[r.IntN(len(w.users))], w.users[r.IntN(len(w.users))]
			if from.id == to.id || len(w.devices[from.id]) < 2 {
				return
			}
			imei := w.devices[from.id][0]
			exec(`UPDATE objects SET account_id = ? WHERE imei = ?`, to.id, imei)
			w.devices[from.id] = w.devices[from.id][1:]
			w.devices[to.id] = append(w.devices[to.id], imei)
		}},
		{"account move", func() {
			i := r.IntN(len(w.users))
			u := &w.users[i]
			to := w.managers[0].id
			if u.managerID == to {
				to = w.managers[1].id
			}
			exec(`UPDATE accounts SET manager_id = ? WHERE id = ?`, to, u.id)
			u.managerID = to
		}},
		{"erase", func() {
			if len(w.users) < 4 {
				return
			}
			i := r.IntN(len(w.users))
			var username string
			if err := db.NewRaw(`SELECT username FROM accounts WHERE id = ?`, w.users[i].id).Scan(ctx, &username); err != nil {
				t.Fatal(err)
			}
			if _, err := s.EraseAccount(ctx, username, false); err != nil {
				t.Fatalf("erase %s: %v", username, err)
			}
			w.users = slices.Delete(w.users, i, i+1)
			w.user(t, ctx, db, r, w.managers[r.IntN(2)].id)
		}},
	}
	requests := func() []storage.ListRequest {
		search := []string{"replacement", "e", "Oil", "check 1"}[r.IntN(4)]
		switch r.IntN(5) {
		case 4:
			return []storage.ListRequest{{}}
		case 0:
			return []storage.ListRequest{{Search: search}}
		case 1:
			return []storage.ListRequest{{Filters: []storage.Filter{{Field: odo, Value: r.IntN(2) == 0}}}}
		case 2:
			return []storage.ListRequest{{Search: search, Filters: []storage.Filter{{Field: odo, Value: true}}}}
		default:
			return []storage.ListRequest{{Filters: []storage.Filter{{Field: name, Value: totalsTerms[0] + " 7"}}}, {Search: search}}
		}
	}
	compared := 0
	for step := range 300 {
		if step%3 == 0 {
			wr := writes[r.IntN(len(writes))]
			wr.do()
		}
		for _, p := range w.principals() {
			scope, err := e.Scope(ctx, inputOf(p, true, nil), storage.Services.Resource())
			if err != nil {
				t.Fatal(err)
			}
			for _, req := range requests() {
				want := freshTotal(t, ctx, db, scope, req)
				req.Desc = r.IntN(2) == 0
				for page := 1; page <= 3; page++ {
					req.Page, req.PerPage = page, 2
					got, err := storage.List(ctx, s, scope, storage.Services, req)
					if err != nil {
						t.Fatal(err)
					}
					if got.Total != want {
						t.Fatalf("step %d, %s %d, %+v: total %d, count(*) %d", step, p.typ, p.id, req, got.Total, want)
					}
					// The page too: read by key from kept ids or walked, it is
					// the page of a list that keeps nothing.
					wantIDs := idsOf(freshPage(t, ctx, db, scope, req).Items)
					if gotIDs := idsOf(got.Items); !slices.Equal(gotIDs, wantIDs) {
						t.Fatalf("step %d, %s %d, %+v: page %v, want %v", step, p.typ, p.id, req, gotIDs, wantIDs)
					}
					// And read by key from the ids kept for the request
					// (every principal here has counters), whatever List
					// would choose in this small world.
					byKey, _, err := storage.ServicePageIDs(ctx, s, scope, req, "ids")
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(byKey, wantIDs) {
						t.Fatalf("step %d, %s %d, %+v: page by key %v, want %v", step, p.typ, p.id, req, byKey, wantIDs)
					}
					compared++
				}
			}
		}
	}
	counted, reused := storage.KeptTotals(s)
	t.Logf("%d totals compared; %d counted with their version, %d reused", compared, counted, reused)
	if counted == 0 || reused == 0 {
		t.Fatalf("kept totals counted %d and reused %d: the test did not exercise both", counted, reused)
	}
}

// countingServices returns a query hook that adds 1 to n for each
// statement that counts services rows (count(*) over "services").
func countingServices(n *atomic.Int64) beforeQuery {
	return func(_ context.Context, query string) {
		if strings.Contains(query, `count(*)`) && strings.Contains(query, `FROM "services"`) {
			n.Add(1)
		}
	}
}

// TestKeptTotalNotRecounted checks that the pages after the first reuse
// the total while nothing the count sees changed, even while writes the
// count cannot see happen (an object's odometer, which flips the
// maintained meter_due of its services; a service of another tenant), and
// count again after a write in the scope; and that two tenants searching
// the same term never share a total.
func TestKeptTotalNotRecounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	e := newEngine(t)
	var counts atomic.Int64
	s := storage.NewStore(db.WithQueryHook(countingServices(&counts)))
	r := rand.New(rand.NewPCG(totalsSeed+1, totalsSeed+1))
	w := newTotalsWorld(t, ctx, db, r)
	a, b := w.users[0], w.users[1]
	for i := range 7 {
		if _, err := db.NewInsert().Model(&storage.Service{AccountID: a.id, IMEI: w.devices[a.id][0], Name: fmt.Sprintf("shared term %d", i),
			Odo: true, OdoInterval: 100, OdoLast: 0}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if _, err := db.NewInsert().Model(&storage.Service{AccountID: b.id, IMEI: w.devices[b.id][0], Name: fmt.Sprintf("shared term %d", i)}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	scopeOf := func(p worldAccount) policy.Scope {
		scope, err := e.Scope(ctx, inputOf(p, true, nil), storage.Services.Resource())
		if err != nil {
			t.Fatal(err)
		}
		return scope
	}
	list := func(p worldAccount, page int, want int64, statements int64, stage string) {
		t.Helper()
		before := counts.Load()
		got, err := storage.List(ctx, s, scopeOf(p), storage.Services, storage.ListRequest{Page: page, PerPage: 2, Search: "shared term"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != want {
			t.Fatalf("%s: account %d page %d: total %d, want %d", stage, p.id, page, got.Total, want)
		}
		if n := counts.Load() - before; n != statements {
			t.Fatalf("%s: account %d page %d: %d counting statements, want %d", stage, p.id, page, n, statements)
		}
	}
	list(a, 1, 7, 1, "first page")
	list(a, 2, 7, 0, "second page")
	list(a, 3, 7, 0, "third page")
	list(b, 1, 4, 1, "another tenant, same term")
	list(b, 1, 4, 0, "another tenant, its first page again")
	list(a, 2, 7, 0, "the first tenant again")
	// the odometer passes the services' due point: meter_due flips, the
	// version does not move
	if _, err := db.ExecContext(ctx, `UPDATE objects SET odometer = 5000 WHERE imei = ?`, w.devices[a.id][0]); err != nil {
		t.Fatal(err)
	}
	var due int
	if err := db.NewRaw(`SELECT count(*) FROM services WHERE account_id = ? AND meter_due`, a.id).Scan(ctx, &due); err != nil {
		t.Fatal(err)
	}
	if due == 0 {
		t.Fatal("the odometer update flipped no meter_due: the test does not check what it says")
	}
	list(a, 2, 7, 0, "after an odometer update")
	// a write in another tenant's scope
	if _, err := db.ExecContext(ctx, `DELETE FROM services WHERE account_id = ? AND name = 'shared term 0'`, b.id); err != nil {
		t.Fatal(err)
	}
	list(a, 2, 7, 0, "after a write of another tenant")
	list(b, 1, 3, 1, "the other tenant after its write")
	// a write in the scope, then an update of a searched column
	if _, err := db.ExecContext(ctx, `DELETE FROM services WHERE account_id = ? AND name = 'shared term 6'`, a.id); err != nil {
		t.Fatal(err)
	}
	list(a, 2, 6, 1, "after a delete in the scope")
	list(a, 3, 6, 0, "and the next page")
	if _, err := db.ExecContext(ctx, `UPDATE services SET name = 'no longer shared' WHERE account_id = ? AND name = 'shared term 5'`, a.id); err != nil {
		t.Fatal(err)
	}
	list(a, 2, 5, 1, "after a rename in the scope")
	// the manager of a sees a's services and its other users'
	m := w.byManager(a.managerID)
	list(m, 2, 5, 1, "the manager")
	list(m, 3, 5, 0, "the manager, next page")
	// b moved under a's manager: the manager's scope grows
	if _, err := db.ExecContext(ctx, `UPDATE accounts SET manager_id = ? WHERE id = ?`, a.managerID, b.id); err != nil {
		t.Fatal(err)
	}
	want := int64(5)
	if b.managerID != a.managerID {
		want += 3
	}
	list(m, 2, want, 1, "the manager after a user moved in")
}

func (w *totalsWorld) byManager(id int64) worldAccount {
	for _, m := range w.managers {
		if m.id == id {
			return m
		}
	}
	panic(fmt.Sprintf("no manager %d", id))
}

// TestVersionedColumnsAreTheDescriptors checks that the update trigger of
// every counted table (<table>_count_version, installed by version_table
// of migrations 20270110000001 and 20270112000001) compares exactly
// account_id, the id and the columns its descriptor filters or searches: a
// filter or search field added without a migration calling version_table
// again would keep totals across updates that change them, and an id
// changed without moving the version would keep stale ids. No other table
// carries one.
func TestVersionedColumnsAreTheDescriptors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	var rows []struct {
		Table string `bun:"tbl"`
		Def   string `bun:"def"`
	}
	if err := db.NewRaw(`SELECT t.tgrelid::regclass::text AS tbl, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t
		JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = 'count_changes' ORDER BY 1`).Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	compared := regexp.MustCompile(`old\.("?)([a-z_0-9]+)"?`)
	got := map[string][]string{}
	for _, row := range rows {
		if !strings.Contains(row.Def, row.Table+"_count_version AFTER UPDATE ON") || !strings.Contains(row.Def, "FOR EACH ROW WHEN") {
			t.Errorf("unexpected count_changes trigger: %s", row.Def)
		}
		var cols []string
		for _, m := range compared.FindAllStringSubmatch(row.Def, -1) {
			if !slices.Contains(cols, m[2]) {
				cols = append(cols, m[2])
			}
		}
		slices.Sort(cols)
		got[row.Table] = cols
	}
	for _, table := range storage.CountedTables() {
		want := storage.VersionedColumns(table)
		if !slices.Equal(got[table], want) {
			t.Errorf("%s_count_version compares %v, its descriptor filters or searches %v (with account_id and the id): "+
				"call SELECT version_table('%s', ARRAY[...]) in a migration", table, got[table], want, table)
		}
		delete(got, table)
	}
	for table := range got {
		t.Errorf("table %s has a count_changes trigger but is not counted", table)
	}
}

// TestCountGenerationBumps checks the statements that change which
// counter rows a scope covers, each bumping count_generation (migration
// 20270110000001): a counter row deleted (an erase, a TRUNCATE of a
// counted table, uncount_table), an account moved to another manager or
// deleted; and that the writes of every request (an insert, whose counter
// upsert takes the UPDATE path; a delete; an update of a listed column or
// of meter_due) do not.
func TestCountGenerationBumps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	r := rand.New(rand.NewPCG(totalsSeed+2, totalsSeed+2))
	w := newTotalsWorld(t, ctx, db, r)
	generation := func() int64 {
		var g int64
		if err := db.NewRaw(`SELECT generation FROM count_generation`).Scan(ctx, &g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	step := func(name string, bumps bool, do func() error) {
		t.Helper()
		before := generation()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if after := generation(); (after > before) != bumps {
			t.Errorf("%s: generation %d → %d, a bump expected: %v", name, before, after, bumps)
		}
	}
	exec := func(query string, args ...any) func() error {
		return func() error { _, err := db.ExecContext(ctx, query, args...); return err }
	}
	u := w.users[0]
	step("insert", false, exec(`INSERT INTO services (imei, account_id, name) VALUES (?, ?, 'generation 1'), (?, ?, 'generation 2')`,
		w.devices[u.id][0], u.id, w.devices[u.id][1], u.id))
	step("insert again (upsert)", false, exec(`INSERT INTO services (imei, account_id, name) VALUES (?, ?, 'generation 3')`, w.devices[u.id][0], u.id))
	step("rename", false, exec(`UPDATE services SET name = 'generation 4' WHERE name = 'generation 3'`))
	step("odometer", false, exec(`UPDATE objects SET odometer = odometer + 100000 WHERE account_id = ?`, u.id))
	step("delete", false, exec(`DELETE FROM services WHERE name = 'generation 4'`))
	step("account updated, same manager", false, exec(`UPDATE accounts SET manager_id = manager_id, email = 'x@example.com' WHERE id = ?`, u.id))
	step("account created", false, func() error { w.user(t, ctx, db, r, w.managers[0].id); return nil })
	other := w.managers[0].id
	if u.managerID == other {
		other = w.managers[1].id
	}
	step("account moved", true, exec(`UPDATE accounts SET manager_id = ? WHERE id = ?`, other, u.id))
	step("no counter deleted", false, exec(`DELETE FROM account_row_counts WHERE account_id = -1`))
	step("erase", true, func() error {
		var username string
		if err := db.NewRaw(`SELECT username FROM accounts WHERE id = ?`, w.users[1].id).Scan(ctx, &username); err != nil {
			return err
		}
		_, err := s.EraseAccount(ctx, username, false)
		return err
	})
	bare := w.account(t, ctx, db, tenancy.User, w.managers[0].id)
	step("account deleted", true, exec(`DELETE FROM accounts WHERE id = ?`, bare.id))
	step("passenger created", false, exec(`INSERT INTO passengers (account_id, passenger_name) VALUES (?, 'generation')`, w.users[0].id))
	step("uncount_table", true, func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // committed below
		for _, q := range []string{`SELECT uncount_table('passengers')`, `SELECT count_table('passengers')`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
	step("truncate", true, exec(`TRUNCATE passengers`))
	step("truncate again, no counter left", false, exec(`TRUNCATE passengers`))
}

// TestKeptTotalAccountMovedOut checks the case only the generation
// catches: an account leaves a manager's scope while as many changes as
// its counters held are made in the scope by writes that leave the total
// alone, so that the sum of the scope's changes is the same as when the
// total was kept, and the total is not.
func TestKeptTotalAccountMovedOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(totalsSeed+3, totalsSeed+3))
	w := newTotalsWorld(t, ctx, db, r)
	m := w.managers[0]
	var x, y worldAccount
	for _, u := range w.users {
		switch {
		case u.managerID != m.id:
		case x.id == 0:
			x = u
		case y.id == 0:
			y = u
		}
	}
	for i := range 3 {
		if _, err := db.NewInsert().Model(&storage.Service{AccountID: x.id, IMEI: w.devices[x.id][0], Name: fmt.Sprintf("moved replacement %d", i)}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.NewInsert().Model(&storage.Service{AccountID: y.id, IMEI: w.devices[y.id][0], Name: "unmatched 0"}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	scope, err := e.Scope(ctx, inputOf(m, true, nil), storage.Services.Resource())
	if err != nil {
		t.Fatal(err)
	}
	req := storage.ListRequest{Page: 1, PerPage: 1, Search: "replacement"}
	if _, err := storage.List(ctx, s, scope, storage.Services, req); err != nil {
		t.Fatal(err)
	}
	var moved int64
	if err := db.NewRaw(`SELECT sum(changes) FROM account_row_counts WHERE resource = 'services' AND account_id = ?`, x.id).Scan(ctx, &moved); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE accounts SET manager_id = ? WHERE id = ?`, w.managers[1].id, x.id); err != nil {
		t.Fatal(err)
	}
	for i := range moved {
		if _, err := db.ExecContext(ctx, `UPDATE services SET name = ? WHERE account_id = ? AND name LIKE 'unmatched %'`, fmt.Sprintf("unmatched %d", i+1), y.id); err != nil {
			t.Fatal(err)
		}
	}
	want := freshTotal(t, ctx, db, scope, req)
	req.Page = 2
	got, err := storage.List(ctx, s, scope, storage.Services, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != want {
		t.Fatalf("after %d left the scope and %d changes in it: total %d, count(*) %d", x.id, moved, got.Total, want)
	}
}

// gatedCounts returns a query hook that holds every statement counting
// services rows until gate is closed (or the statement's context ends),
// and counts those statements and the statements that read a scope's
// version alone.
func gatedCounts(gate <-chan struct{}, counts, versions *atomic.Int64) beforeQuery {
	return func(ctx context.Context, query string) {
		switch {
		case strings.Contains(query, `count(*)`) && strings.Contains(query, `FROM "services"`):
			counts.Add(1)
			select {
			case <-gate:
			case <-ctx.Done():
			}
		case strings.Contains(query, `"account_row_counts"`):
			versions.Add(1)
		}
	}
}

// TestKeptTotalCountedOnceForConcurrentRequests checks that requests
// missing the same total at the same version share one count
// (paging.Cache.Count): eight first pages of one search, all past the
// version read before the first count may run, count once, and all answer
// the total; a request whose client goes away while it runs the shared
// count fails alone; and when the deadline of the request running the
// count passes, a request that waited for it counts again itself and
// answers.
func TestKeptTotalCountedOnceForConcurrentRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(totalsSeed+4, totalsSeed+4))
	w := newTotalsWorld(t, ctx, db, r)
	u := w.users[0]
	// Three terms of five services each: a first page of two is not the
	// last, so its total is counted.
	for _, term := range []string{"alpha", "bravo", "charlie"} {
		for i := range 5 {
			if _, err := db.NewInsert().Model(&storage.Service{AccountID: u.id, IMEI: w.devices[u.id][0], Name: fmt.Sprintf("flight %s %d", term, i)}).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	scope, err := e.Scope(ctx, inputOf(u, true, nil), storage.Services.Resource())
	if err != nil {
		t.Fatal(err)
	}
	list := func(ctx context.Context, s *storage.Store, search string) (int64, error) {
		p, err := storage.List(ctx, s, scope, storage.Services, storage.ListRequest{Page: 1, PerPage: 2, Search: search})
		return p.Total, err
	}
	type answer struct {
		total int64
		err   error
	}
	start := func(ctx context.Context, s *storage.Store, search string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			total, err := list(ctx, s, search)
			ch <- answer{total, err}
		}()
		return ch
	}

	t.Run("eight requests, one count", func(t *testing.T) {
		gate := make(chan struct{})
		var counts, versions atomic.Int64
		s := storage.NewStore(db.WithQueryHook(gatedCounts(gate, &counts, &versions)))
		const n = 8
		answers := make([]<-chan answer, n)
		for i := range answers {
			answers[i] = start(ctx, s, "flight alpha")
		}
		waitFor(t, "every request to read the version", func() bool { return versions.Load() >= n })
		close(gate)
		for _, ch := range answers {
			if a := <-ch; a.err != nil || a.total != 5 {
				t.Errorf("total %d, %v: want 5", a.total, a.err)
			}
		}
		if got := counts.Load(); got != 1 {
			t.Errorf("%d counting statements for %d concurrent requests, want 1", got, n)
		}
	})

	t.Run("the client running the count goes away", func(t *testing.T) {
		gate := make(chan struct{})
		var counts, versions atomic.Int64
		s := storage.NewStore(db.WithQueryHook(gatedCounts(gate, &counts, &versions)))
		gone, cancel := context.WithCancel(ctx)
		first := start(gone, s, "flight bravo")
		waitFor(t, "the first request's count", func() bool { return counts.Load() == 1 })
		second := start(ctx, s, "flight bravo")
		waitFor(t, "the second request to read the version", func() bool { return versions.Load() == 2 })
		cancel()
		if a := <-first; !errors.Is(a.err, context.Canceled) {
			t.Errorf("the request whose client went away: total %d, %v; want context.Canceled", a.total, a.err)
		}
		close(gate)
		if a := <-second; a.err != nil || a.total != 5 {
			t.Errorf("the other request: total %d, %v; want 5", a.total, a.err)
		}
		if got := counts.Load(); got != 1 {
			t.Errorf("%d counting statements, want 1", got)
		}
	})

	t.Run("the deadline of the request running the count passes", func(t *testing.T) {
		gate := make(chan struct{})
		var counts, versions atomic.Int64
		s := storage.NewStore(db.WithQueryHook(gatedCounts(gate, &counts, &versions)))
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		first := start(short, s, "flight charlie")
		waitFor(t, "the first request's count", func() bool { return counts.Load() == 1 })
		second := start(ctx, s, "flight charlie")
		waitFor(t, "the second request to read the version", func() bool { return versions.Load() == 2 })
		if a := <-first; a.err == nil {
			t.Errorf("the request past its deadline answered %d", a.total)
		}
		close(gate)
		if a := <-second; a.err != nil || a.total != 5 {
			t.Errorf("the request that waited: total %d, %v; want 5", a.total, a.err)
		}
		if got := counts.Load(); got != 2 {
			t.Errorf("%d counting statements, want 2 (the expired one and the retry)", got)
		}
	})
}

// TestKeptTotalsPerTenant (issue 34 item 8): one tenant searching 400
// distinct terms, through List, fills the kept totals (lowered to 16 KiB)
// and evicts only its own entries: another tenant's search kept before is
// still answered without a count, and so is a third tenant's filtered
// list; the bytes held stay within the budget, and no tenant holds more
// entries than the flooding one.
func TestKeptTotalsPerTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	e := newEngine(t)
	var counts atomic.Int64
	s := storage.NewStore(db.WithQueryHook(countingServices(&counts)))
	const budget = 16 << 10
	storage.SetKeptTotalsBytes(s, budget)
	r := rand.New(rand.NewPCG(totalsSeed+3, totalsSeed+3))
	w := newTotalsWorld(t, ctx, db, r)
	scopeOf := func(p worldAccount) policy.Scope {
		scope, err := e.Scope(ctx, inputOf(p, true, nil), storage.Services.Resource())
		if err != nil {
			t.Fatal(err)
		}
		return scope
	}
	list := func(p worldAccount, req storage.ListRequest) int64 {
		t.Helper()
		before := counts.Load()
		if _, err := storage.List(ctx, s, scopeOf(p), storage.Services, req); err != nil {
			t.Fatal(err)
		}
		return counts.Load() - before
	}
	flooder, kept, filtered := w.managers[0], w.users[1], w.users[2]
	search := storage.ListRequest{Page: 1, PerPage: 1, Search: "a"}
	odoOn := storage.ListRequest{Page: 1, PerPage: 1, Filters: []storage.Filter{filter(storage.Services, "odo", true)}}
	if list(kept, search) != 1 || list(filtered, odoOn) != 1 {
		t.Fatal("the first pages did not count")
	}
	for i := range 400 {
		list(flooder, storage.ListRequest{Page: 1, PerPage: 1, Search: fmt.Sprintf("term %d", i)})
	}
	search.Page, odoOn.Page = 2, 2
	if n := list(kept, search); n != 0 {
		t.Errorf("a tenant's kept search was counted again (%d statements) after another's 400 terms", n)
	}
	if n := list(filtered, odoOn); n != 0 {
		t.Errorf("a tenant's kept filter was counted again (%d statements) after another's 400 terms", n)
	}
	held, entries := storage.KeptTotalsHeld(s)
	most := 0
	for _, n := range entries {
		most = max(most, n)
	}
	t.Logf("%d bytes held of %d; entries per tenant %v", held, budget, entries)
	if held > budget || len(entries) != 3 || most < 400/10 {
		t.Errorf("%d bytes held (budget %d), entries per tenant %v: want 3 tenants, the flooder's the most", held, budget, entries)
	}
}

// TestKeptTotalsHeapPerFilter (issue 34 item 8): the heap a kept total
// holds per distinct filter value, measured with runtime.MemStats after
// 1,000 distinct searches of a manager and of the admin through List,
// with short terms and with terms of the longest length the API takes
// (100 characters): a hash key and a version, whatever the length of the
// statement. Keyed by the rendered statements, an entry held their whole
// SQL, filter text included (twice here: services search two columns),
// for as long as the total was kept: 660-909 bytes a term in this small
// world with short terms, ~28 KiB for the scopes. Logged for
// docs/performance.md, "Kept totals' memory".
func TestKeptTotalsHeapPerFilter(t *testing.T) {
	ctx := context.Background()
	_, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(totalsSeed+4, totalsSeed+4))
	w := newTotalsWorld(t, ctx, db, r)
	// settled reads the live heap: two collections empty the sync.Pools too
	settled := func(m *runtime.MemStats) {
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(m)
	}
	const terms = 1000
	// held returns the heap held a distinct term of p's searches, the
	// terms made of prefix and a number, padded to length characters.
	held := func(p worldAccount, prefix string, length int) int64 {
		t.Helper()
		s := storage.NewStore(db.DB) // empty kept totals: each measure grows them alike
		scope, err := e.Scope(ctx, inputOf(p, true, nil), storage.Services.Resource())
		if err != nil {
			t.Fatal(err)
		}
		term := func(i int) string {
			s := fmt.Sprintf("%s %d ", prefix, i)
			return s + strings.Repeat("x", length-len(s))
		}
		// warm the scope and statement caches and the pools first
		if _, err := storage.List(ctx, s, scope, storage.Services, storage.ListRequest{Page: 1, PerPage: 1, Search: term(-1)}); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		settled(&before)
		counted, _ := storage.KeptTotals(s)
		for i := range terms {
			if _, err := storage.List(ctx, s, scope, storage.Services, storage.ListRequest{Page: 1, PerPage: 1, Search: term(i)}); err != nil {
				t.Fatal(err)
			}
		}
		settled(&after)
		runtime.KeepAlive(s)
		if c, _ := storage.KeptTotals(s); c-counted != terms {
			t.Fatalf("%d totals counted for %d terms", c-counted, terms)
		}
		per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / terms
		t.Logf("%s, terms of %d characters: %d bytes of heap held a term", p.typ, length, per)
		return per
	}
	for i, p := range []worldAccount{w.managers[0], w.admin} {
		short := held(p, fmt.Sprintf("short%d", i), 20)
		long := held(p, fmt.Sprintf("long%d", i), 100)
		if short > 1024 || long > 1024 || long-short > 64 {
			t.Errorf("%s: %d bytes of heap held a term of 20 characters, %d of 100: want at most 1024, and no more for the longer term", p.typ, short, long)
		}
	}
}
