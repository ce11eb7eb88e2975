package storage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

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
// more than deferFactor times the rows (deferPage, with the list's total
// and the table's estimate), by key from the ids it keeps then, or as a
// deferred join when the rows are more than it keeps ids of; it walks for
// one account's rows, which an index returns in order, for another sort
// and after a cursor. A page past the total reads no row.
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
				if tc.eligible {
					all := tc.req
					all.Page, all.PerPage = 1, 5000
					ids, _, err := storage.ServicePageIDs(ctx, s, scope, all, "walk")
					if err != nil {
						t.Fatal(err)
					}
					rows := int64(len(ids))
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
	if chose["deferred"] < 3 || chose["walk"] < 3 || chose["ids"] < 3 {
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
// tree (a service created, then deleted) moves the version: the next page
// holds the new row, then loses it, with the total following.
func TestKeptIDsFollowWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 3000)
	northwind := f.scope(t, "northwind", "services")
	req := storage.ListRequest{Page: 1, PerPage: 500, Desc: true}
	if got, err := storage.PageShape(ctx, f.s, northwind, req); err != nil || got != "ids" {
		t.Fatalf("northwind's page read %q (%v): want by key", got, err)
	}
	list := func(stage string) []int64 {
		t.Helper()
		p, err := storage.List(ctx, f.s, northwind, storage.Services, req)
		if err != nil {
			t.Fatal(err)
		}
		ids := idsOf(p.Items)
		if p.Total != int64(len(ids)) {
			t.Fatalf("%s: total %d for %d rows", stage, p.Total, len(ids))
		}
		return ids
	}
	before := list("before")
	tailspin := f.accountIDs(t, "tailspin")[0]
	var id int64
	if err := f.db.QueryRowContext(ctx, `INSERT INTO services (account_id, imei, name)
		SELECT ?, imei, 'Kept ids probe' FROM objects WHERE account_id = ? ORDER BY imei LIMIT 1 RETURNING service_id`, tailspin, tailspin).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if after := list("after a create"); len(after) != len(before)+1 || after[0] != id {
		t.Fatalf("after creating %d: %v, before %v", id, after, before)
	}
	if _, err := f.db.ExecContext(ctx, `DELETE FROM services WHERE service_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if after := list("after the delete"); !slices.Equal(after, before) {
		t.Fatalf("after deleting %d: %v, want %v", id, after, before)
	}
}
