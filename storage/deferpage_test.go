package storage_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// addServicesOf adds n services to the account username owns, on its
// first device: a table in which the other accounts' rows are sparse.
func addServicesOf(t *testing.T, f listFixture, username string, n int) {
	t.Helper()
	id := f.accountIDs(t, username)[0]
	_, err := f.db.ExecContext(context.Background(), `
INSERT INTO services (account_id, imei, name)
SELECT ?, (SELECT imei FROM objects WHERE account_id = ? ORDER BY imei LIMIT 1), 'Bulk ' || g
FROM generate_series(1, ?) AS g`, id, id, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ExecContext(context.Background(), `ANALYZE services`); err != nil {
		t.Fatal(err)
	}
}

// TestDeferredPagesEqualWalk: every page of every caller read as a
// deferred join (the page's ids from the counting shape of the scope,
// then the rows) is the page the primary-key walk reads, in both
// directions and at every page size, up to the first empty page; and
// whether more rows follow agrees. So is every page of the callers whose
// pages walk the table (the admin, the managers) read by key from the ids
// kept with its total.
func TestDeferredPagesEqualWalk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addTiedServices(t, f, 40)
	addServicesOf(t, f, "acme", 300)
	odo, _ := storage.Services.Field("odo")
	variants := map[string]func(*storage.ListRequest){
		"all":    func(*storage.ListRequest) {},
		"search": func(r *storage.ListRequest) { r.Search = "tie" },
		// LIKE's metacharacters match themselves, in both shapes.
		"search metacharacters": func(r *storage.ListRequest) { r.Search = `%_\'` },
		"filter":                func(r *storage.ListRequest) { r.Filters = []storage.Filter{{Field: odo, Value: true}} },
	}
	spread := map[string]bool{"admin": true, "fleetco": true, "northwind": true}
	for _, who := range []string{"admin", "fleetco", "northwind", "acme", "tailspin", "hooli"} {
		scope := f.scope(t, who, "services")
		for variant, apply := range variants {
			for _, desc := range []bool{false, true} {
				for _, per := range []int{1, 3, 7, 50} {
					t.Run(fmt.Sprintf("%s/%s/desc=%v/per=%d", who, variant, desc, per), func(t *testing.T) {
						// One row a page only for the first pages: the rest is
						// the same statement with another OFFSET.
						last := 1 << 30
						if per == 1 {
							last = 25
						}
						seen := 0
						shapes := []string{"deferred"}
						if spread[who] {
							shapes = append(shapes, "ids")
						}
						for page := 1; page <= last; page++ {
							req := storage.ListRequest{Page: page, PerPage: per, Desc: desc, Sort: storage.Services.ID()}
							apply(&req)
							walk, walkMore, err := storage.ServicePageIDs(ctx, f.s, scope, req, "walk")
							if err != nil {
								t.Fatal(err)
							}
							for _, how := range shapes {
								got, more, err := storage.ServicePageIDs(ctx, f.s, scope, req, how)
								if err != nil {
									t.Fatal(err)
								}
								if !slices.Equal(walk, got) || walkMore != more {
									t.Fatalf("page %d: %s %v (more %v), walk %v (more %v)", page, how, got, more, walk, walkMore)
								}
							}
							seen += len(walk)
							if len(walk) == 0 {
								break
							}
						}
						if who != "hooli" && variant != "search metacharacters" && seen == 0 {
							t.Fatalf("%s listed no service: the comparison proved nothing", who)
						}
					})
				}
			}
		}
	}
}

// TestPageShape: List reads a page in id order whose walk reads the
// table's key (a manager's tree, the admin) by key from the ids kept with
// the total of its search, and, filtered or not, when the walk would read
// more than twice the rows (paging.DeferPage, with the list's total
// and the table's estimate), by key from the ids it keeps then, or as a
// deferred join when the rows are more than it keeps ids of; it walks for
// one account's rows, which an index returns in order, and for another
// sort; after a cursor it reads the keyset page. The shape is the one
// paging.Explain names (paging.Rows). A page past the total reads no row.
func TestPageShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 3000)
	var table int64
	if err := f.db.QueryRowContext(ctx, `SELECT reltuples::bigint FROM pg_class WHERE oid = 'services'::regclass`).Scan(&table); err != nil || table < 3000 {
		t.Fatalf("services' estimate %d, %v: want the analyzed table", table, err)
	}
	name, _ := storage.Services.Field("name")
	odo, _ := storage.Services.Field("odo")
	id := storage.Services.ID()
	cases := []struct {
		name     string
		who      string
		req      storage.ListRequest
		eligible bool
	}{
		{"northwind's few rows among acme's thousands", "northwind", storage.ListRequest{Page: 1, PerPage: 50}, true},
		{"northwind, page 2 descending", "northwind", storage.ListRequest{Page: 2, PerPage: 2, Desc: true}, true},
		{"northwind, the id as the sort (the api's default)", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Sort: id}, true},
		{"fleetco's tree holds most rows", "fleetco", storage.ListRequest{Page: 1, PerPage: 50}, true},
		{"fleetco, deep", "fleetco", storage.ListRequest{Page: 40, PerPage: 50}, true},
		{"the admin, page 1", "admin", storage.ListRequest{Page: 1, PerPage: 50}, true},
		{"the admin, a rare search", "admin", storage.ListRequest{Page: 1, PerPage: 50, Search: "tailspin"}, true},
		{"the admin, a common search", "admin", storage.ListRequest{Page: 1, PerPage: 50, Search: "bulk"}, true},
		{"fleetco, a common search, deep", "fleetco", storage.ListRequest{Page: 50, PerPage: 50, Search: "bulk"}, true},
		{"northwind, a search and a filter", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Search: "a", Filters: []storage.Filter{{Field: odo, Value: true}}}, true},
		{"northwind filtered", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Filters: []storage.Filter{{Field: odo, Value: true}}}, true},
		{"fleetco filtered, deep", "fleetco", storage.ListRequest{Page: 40, PerPage: 50, Filters: []storage.Filter{{Field: odo, Value: false}}}, true},
		{"a user's search", "acme", storage.ListRequest{Page: 2, PerPage: 50, Search: "bulk"}, false},
		{"northwind by name", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Sort: name}, false},
		{"northwind after a cursor", "northwind", storage.ListRequest{Page: 1, PerPage: 50, After: &storage.Cursor{Sort: id, ID: 1}}, false},
		{"one account", "tailspin", storage.ListRequest{Page: 3, PerPage: 1}, false},
		{"one account, deep", "acme", storage.ListRequest{Page: 50, PerPage: 50}, false},
	}
	chose := map[string]int{}
	for _, maxIDs := range []int64{50_000, 1} {
		s := storage.NewStore(f.db.DB)
		storage.SetKeptIDsMax(s, maxIDs)
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/at most %d ids", tc.name, maxIDs), func(t *testing.T) {
				scope := f.scope(t, tc.who, "services")
				got, err := storage.PageShape(ctx, s, scope, tc.req)
				if err != nil {
					t.Fatal(err)
				}
				want := "walk"
				if tc.req.After != nil {
					// A walk after the cursor, with no OFFSET.
					want = "keyset"
				}
				if tc.eligible {
					rows := freshPage(t, ctx, f.db, scope, tc.req).Total
					switch {
					case tc.req.Search != "" && rows <= maxIDs:
						want = "ids"
					case storage.DeferPage(int64(tc.req.Page-1)*int64(tc.req.PerPage), int64(tc.req.PerPage)+1, rows, table):
						want = "deferred"
						if rows <= maxIDs {
							want = "ids"
						}
					}
				}
				chose[want]++
				if got != want {
					t.Errorf("shape %s, want %s", got, want)
				}
			})
		}
	}
	if chose["deferred"] < 3 || chose["walk"] < 3 || chose["ids"] < 3 || chose["keyset"] < 1 {
		t.Errorf("the cases chose %v: want each shape several times", chose)
	}
	// What List returns: every page of northwind, deferred, is the walk's,
	// with the tree's total; a page past the total is empty.
	northwind := f.scope(t, "northwind", "services")
	all, _, err := storage.ServicePageIDs(ctx, f.s, northwind, storage.ListRequest{Page: 1, PerPage: 500}, "walk")
	if err != nil || len(all) < 3 {
		t.Fatalf("northwind's services %v, %v: want a few", all, err)
	}
	for page := 1; (page-1)*2 <= len(all); page++ {
		p, err := storage.List(ctx, f.s, northwind, storage.Services, storage.ListRequest{Page: page, PerPage: 2})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, it := range p.Items {
			ids = append(ids, it.ServiceID)
		}
		want := all[min((page-1)*2, len(all)):min(page*2, len(all))]
		if !slices.Equal(ids, want) || p.Total != int64(len(all)) {
			t.Errorf("page %d: %v of %d, want %v of %d", page, ids, p.Total, want, len(all))
		}
	}
}

// TestKeptIDsFollowWrites: the pages of a manager's sparse tree are read
// by key from the ids kept at the version of its rows, and a write in the
// tree (a service created, given a new id, then deleted) moves the
// version: the ids are read again (once), and the next page holds the new
// row, then its new id, then loses it, with the total following. Without
// a write the kept ids are reused.
func TestKeptIDsFollowWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 3000)
	// reads counts the statements that read a list's ids.
	var reads atomic.Int64
	s := storage.NewStore(f.db.WithQueryHook(beforeQuery(func(_ context.Context, query string) {
		if strings.Contains(query, "array_agg(") {
			reads.Add(1)
		}
	})))
	northwind := f.scope(t, "northwind", "services")
	req := storage.ListRequest{Page: 1, PerPage: 500, Desc: true}
	if got, err := storage.PageShape(ctx, s, northwind, req); err != nil || got != "ids" {
		t.Fatalf("northwind's page read %q (%v): want by key", got, err)
	}
	list := func(stage string, want int64) []int64 {
		t.Helper()
		before := reads.Load()
		p, err := storage.List(ctx, s, northwind, storage.Services, req)
		if err != nil {
			t.Fatal(err)
		}
		if n := reads.Load() - before; n != want {
			t.Fatalf("%s: %d reads of the ids, want %d", stage, n, want)
		}
		ids := idsOf(p.Items)
		if p.Total != int64(len(ids)) {
			t.Fatalf("%s: total %d for %d rows", stage, p.Total, len(ids))
		}
		return ids
	}
	before := list("kept", 0)
	if again := list("no write", 0); !slices.Equal(again, before) {
		t.Fatalf("no write: %v, want %v", again, before)
	}
	tailspin := f.accountIDs(t, "tailspin")[0]
	var id int64
	if err := f.db.QueryRowContext(ctx, `INSERT INTO services (account_id, imei, name)
		SELECT ?, imei, 'Kept ids probe' FROM objects WHERE account_id = ? ORDER BY imei LIMIT 1 RETURNING service_id`, tailspin, tailspin).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if after := list("after a create", 1); len(after) != len(before)+1 || after[0] != id {
		t.Fatalf("after creating %d: %v, before %v", id, after, before)
	}
	// A new id for the row (no code of the service does it; a manual fix
	// may): the version moves (migration 20270112000001).
	if _, err := f.db.ExecContext(ctx, `UPDATE services SET service_id = service_id + 1000000 WHERE service_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if after := list("after a new id", 1); len(after) != len(before)+1 || after[0] != id+1000000 || slices.Contains(after, id) {
		t.Fatalf("after renumbering %d: %v, before %v", id, after, before)
	}
	if _, err := f.db.ExecContext(ctx, `DELETE FROM services WHERE service_id = ?`, id+1000000); err != nil {
		t.Fatal(err)
	}
	if after := list("after the delete", 1); !slices.Equal(after, before) {
		t.Fatalf("after deleting %d: %v, want %v", id+1000000, after, before)
	}
}

// TestKeptIDsNotAggregatedOverTheBound: a search whose last count was
// over the bound of kept ids is counted again without them (no array_agg
// of every match to drop), and once its total falls within the bound the
// next request counts it with its ids and reads its pages by key. Every
// page is a fresh read's.
func TestKeptIDsNotAggregatedOverTheBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 300)
	var aggs, counts atomic.Int64
	s := storage.NewStore(f.db.WithQueryHook(beforeQuery(func(_ context.Context, query string) {
		if strings.Contains(query, "array_agg(") {
			aggs.Add(1)
		}
		if strings.Contains(query, "count(*)") {
			counts.Add(1)
		}
	})))
	storage.SetKeptIDsMax(s, 100)
	admin := f.scope(t, "admin", "services")
	req := storage.ListRequest{Page: 2, PerPage: 10, Search: "Bulk"}
	// list reads the page, compares it with a fresh read, and returns
	// the counts it ran, those with the ids, and how the next page would
	// be read.
	list := func(stage string) (counted, withIDs int64, next string) {
		t.Helper()
		a, c := aggs.Load(), counts.Load()
		got, err := storage.List(ctx, s, admin, storage.Services, req)
		if err != nil {
			t.Fatal(err)
		}
		counted, withIDs = counts.Load()-c, aggs.Load()-a
		want := freshPage(t, ctx, f.db, admin, req)
		if !slices.Equal(idsOf(got.Items), idsOf(want.Items)) || got.Total != want.Total || (got.Next == nil) != (want.Next == nil) {
			t.Errorf("%s: %v of %d, want %v of %d", stage, idsOf(got.Items), got.Total, idsOf(want.Items), want.Total)
		}
		if next, err = storage.PageShape(ctx, s, admin, req); err != nil {
			t.Fatal(err)
		}
		if n := aggs.Load() - a - withIDs; n != 0 {
			t.Errorf("%s: choosing the next page's shape counted with the ids %d times", stage, n)
		}
		return counted, withIDs, next
	}
	acme := f.accountIDs(t, "acme")[0]
	write := func(query string) {
		t.Helper()
		if _, err := f.db.ExecContext(ctx, query, acme); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing known yet: counted with the ids, over the bound.
	if c, a, next := list("first count"); c != 1 || a != 1 || next == "ids" {
		t.Errorf("first count: %d counts, %d with the ids, next page %q; want 1, 1, no ids", c, a, next)
	}
	write(`UPDATE services SET name = name || ' again' WHERE service_id = (SELECT max(service_id) FROM services WHERE account_id = ?)`)
	if c, a, next := list("over the bound before"); c != 1 || a != 0 || next == "ids" {
		t.Errorf("over the bound before: %d counts, %d with the ids, next page %q; want 1, 0, no ids", c, a, next)
	}
	write(`UPDATE services SET name = 'Gone ' || service_id WHERE account_id = ? AND name LIKE 'Bulk%' AND service_id % 10 <> 0`)
	// Counted without the ids, the total within the bound: counted with
	// them (in the same request where its page would be a deferred join,
	// else in the next one), once, and then read by key.
	var c, a int64
	var next string
	for i := range 3 {
		ci, ai, n := list(fmt.Sprintf("within the bound, request %d", i+1))
		c, a, next = c+ci, a+ai, n
	}
	if c != 2 || a != 1 || next != "ids" {
		t.Errorf("within the bound: %d counts, %d with the ids, next page %q; want 2, 1, by key", c, a, next)
	}
}

// TestKeptIDsRowLeavesBeforeThePage: a row of a page read by key leaves
// the list between the version read and the page statement (deleted,
// renamed out of the search, its account moved out of a manager's tree):
// the page must not pass for the last one with a total of its own making;
// it is the page, total and next cursor of a Store that keeps nothing,
// read after the write.
func TestKeptIDsRowLeavesBeforeThePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 300)
	// write, when armed, runs once just before the next page statement
	// read by key: a commit between the version read and the page.
	var armed atomic.Bool
	var write func()
	s := storage.NewStore(f.db.WithQueryHook(beforeQuery(func(_ context.Context, query string) {
		if strings.Contains(query, `= ANY(`) && strings.Contains(query, `FROM "services"`) && armed.CompareAndSwap(true, false) {
			write()
		}
	})))
	northwind, fleetco := f.accountIDs(t, "northwind")[0], f.accountIDs(t, "fleetco")[0]
	owners := f.accountIDs(t, "tailspin", "contoso")
	leaves := []struct {
		name  string
		write string
		undo  string
	}{
		{"deleted", `DELETE FROM services WHERE service_id = ?`, ""},
		{"renamed out", `UPDATE services SET name = 'gone ' || service_id WHERE service_id = ?`, ""},
		{"account moved out", `UPDATE accounts SET manager_id = ? WHERE id = (SELECT account_id FROM services WHERE service_id = ?)`,
			`UPDATE accounts SET manager_id = ? WHERE id = ?`},
	}
	term := 0
	for _, who := range []string{"admin", "northwind"} {
		for _, leave := range leaves {
			if who == "admin" && leave.undo != "" {
				continue // the admin's scope holds every account
			}
			for _, desc := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/desc=%v", who, leave.name, desc), func(t *testing.T) {
					term++
					search := fmt.Sprintf("Lv%02dx", term)
					for _, owner := range owners {
						if _, err := f.db.ExecContext(ctx, `INSERT INTO services (account_id, imei, name)
							SELECT ?, (SELECT imei FROM objects WHERE account_id = ? ORDER BY imei LIMIT 1), ? || ' ' || g
							FROM generate_series(1, 4) AS g`, owner, owner, search); err != nil {
							t.Fatal(err)
						}
					}
					scope := f.scope(t, who, "services")
					req := storage.ListRequest{Page: 1, PerPage: 3, Search: search, Desc: desc}
					if got, err := storage.PageShape(ctx, s, scope, req); err != nil || got != "ids" {
						t.Fatalf("page read %q (%v): want by key", got, err)
					}
					first, err := storage.List(ctx, s, scope, storage.Services, req)
					if err != nil || len(first.Items) != 3 || first.Next == nil {
						t.Fatalf("first page %v of %d (%v): want 3 of more", idsOf(first.Items), first.Total, err)
					}
					victim := first.Items[1]
					write = func() {
						args := []any{victim.ServiceID}
						if leave.undo != "" {
							args = []any{fleetco, victim.ServiceID}
						}
						if _, err := f.db.ExecContext(ctx, leave.write, args...); err != nil {
							t.Error(err)
						}
					}
					if leave.undo != "" {
						t.Cleanup(func() {
							if _, err := f.db.ExecContext(ctx, leave.undo, northwind, victim.AccountID); err != nil {
								t.Error(err)
							}
						})
					}
					got, want := listArmed(t, ctx, s, f, &armed, scope, req)
					if !slices.Equal(idsOf(got.Items), idsOf(want.Items)) || got.Total != want.Total || (got.Next == nil) != (want.Next == nil) {
						t.Errorf("after %d %s: %v of %d (next %v), want %v of %d (next %v)", victim.ServiceID, leave.name,
							idsOf(got.Items), got.Total, got.Next != nil, idsOf(want.Items), want.Total, want.Next != nil)
					}
				})
			}
		}
	}
}

// TestListRequestBounds: pages and page sizes whose offset does not fit
// in an int64, or a page size beyond storage's bound, are ErrBadListRequest
// for every kind of caller and shape (a user's walk, a manager's and the
// admin's pages read by key), never a panic or a page.
func TestListRequestBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 300)
	bad := []storage.ListRequest{
		{Page: math.MaxInt, PerPage: 500},
		{Page: 1 << 62, PerPage: 4},
		{Page: math.MaxInt/500 + 2, PerPage: 500},
		{Page: 1, PerPage: math.MaxInt},
		{Page: 1, PerPage: 1 << 50},
		{Page: math.MaxInt, PerPage: math.MaxInt},
		{Page: 1, PerPage: storage.MaxPerPage + 1},
		{Page: storage.MaxPage + 1, PerPage: 1},
		{Page: 0, PerPage: 1},
		{Page: 1, PerPage: 0},
		{Page: math.MinInt, PerPage: 1},
	}
	for _, who := range []string{"admin", "northwind", "acme"} {
		scope := f.scope(t, who, "services")
		for _, req := range bad {
			for _, search := range []string{"", "Bulk"} {
				for _, desc := range []bool{false, true} {
					r := req
					r.Search, r.Desc = search, desc
					if _, err := storage.List(ctx, f.s, scope, storage.Services, r); !errors.Is(err, storage.ErrBadListRequest) {
						t.Errorf("%s %+v: %v, want ErrBadListRequest", who, r, err)
					}
				}
			}
		}
	}
	// The largest the api sends is a page.
	for _, who := range []string{"admin", "northwind", "acme"} {
		if p, err := storage.List(ctx, f.s, f.scope(t, who, "services"), storage.Services, storage.ListRequest{Page: storage.MaxPage, PerPage: storage.MaxPerPage, Search: "Bulk"}); err != nil || len(p.Items) != 0 {
			t.Errorf("%s, page 2^31-1 of 500: %d items, %v; want an empty page", who, len(p.Items), err)
		}
	}
}

// TestKeptIDsPageOneStatement: once its ids are kept, a page read by key
// that is not the last is one statement (the page, checking the version
// itself), with no version read before it and no walk after it; and a
// transaction that both adds a row to the list and changes a row of the
// page, committed before that statement, is seen whole: the page is that
// of a Store that keeps nothing, read after it.
func TestKeptIDsPageOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 300)
	owners := f.accountIDs(t, "tailspin", "contoso")
	for _, owner := range owners {
		if _, err := f.db.ExecContext(ctx, `INSERT INTO services (account_id, imei, name)
			SELECT ?, (SELECT imei FROM objects WHERE account_id = ? ORDER BY imei LIMIT 1), 'Snap ' || g
			FROM generate_series(1, 6) AS g`, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	var statements atomic.Int64
	var armed atomic.Bool
	var write func()
	s := storage.NewStore(f.db.WithQueryHook(beforeQuery(func(_ context.Context, query string) {
		statements.Add(1)
		if strings.Contains(query, `= ANY(`) && armed.CompareAndSwap(true, false) {
			write()
		}
	})))
	for _, who := range []string{"admin", "northwind"} {
		for _, desc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/desc=%v", who, desc), func(t *testing.T) {
				scope := f.scope(t, who, "services")
				req := storage.ListRequest{Page: 2, PerPage: 3, Search: "Snap", Desc: desc}
				if _, err := storage.List(ctx, s, scope, storage.Services, req); err != nil {
					t.Fatal(err)
				}
				before := statements.Load()
				got, err := storage.List(ctx, s, scope, storage.Services, req)
				if err != nil || len(got.Items) != 3 || got.Next == nil {
					t.Fatalf("page 2: %v of %d (%v): want 3 of more", idsOf(got.Items), got.Total, err)
				}
				if n := statements.Load() - before; n != 1 {
					t.Errorf("a page read by key from kept ids ran %d statements, want 1", n)
				}
				// One transaction: a row joins the list (a new id within
				// the page's range is not possible: ids only grow, so it
				// joins by a rename), and a row of the page is renamed
				// (it still matches).
				page := got.Items
				write = func() {
					tx, err := f.db.BeginTx(ctx, nil)
					if err != nil {
						t.Error(err)
						return
					}
					defer tx.Rollback() //nolint:errcheck // committed below
					if _, err := tx.ExecContext(ctx, `UPDATE services SET name = 'Snap joined ' || service_id
						WHERE service_id = (SELECT min(service_id) FROM services WHERE account_id = ? AND name NOT LIKE 'Snap%')`, owners[0]); err != nil {
						t.Error(err)
					}
					if _, err := tx.ExecContext(ctx, `UPDATE services SET name = name || ' renamed' WHERE service_id = ?`, page[1].ServiceID); err != nil {
						t.Error(err)
					}
					if err := tx.Commit(); err != nil {
						t.Error(err)
					}
				}
				got, want := listArmed(t, ctx, s, f, &armed, scope, req)
				if !slices.Equal(idsOf(got.Items), idsOf(want.Items)) || got.Total != want.Total || (got.Next == nil) != (want.Next == nil) {
					t.Errorf("after the transaction: %v of %d, want %v of %d", idsOf(got.Items), got.Total, idsOf(want.Items), want.Total)
				}
				for i := range min(len(got.Items), len(want.Items)) {
					if got.Items[i].Name != want.Items[i].Name {
						t.Errorf("item %d: %q, want %q", i, got.Items[i].Name, want.Items[i].Name)
					}
				}
			})
		}
	}
}

// listArmed arms the test's write, reads the page through s, fails when
// no page statement read by key ran (the write never happened), and
// returns that page with the page of a Store that keeps nothing, read
// after the write.
func listArmed(t *testing.T, ctx context.Context, s *storage.Store, f listFixture, armed *atomic.Bool, scope policy.Scope, req storage.ListRequest) (got, want storage.Page[storage.Service]) {
	t.Helper()
	armed.Store(true)
	got, err := storage.List(ctx, s, scope, storage.Services, req)
	if err != nil {
		t.Fatal(err)
	}
	if armed.Load() {
		t.Fatal("no page statement read by key ran: the write never happened")
	}
	return got, freshPage(t, ctx, f.db, scope, req)
}
