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
// whether more rows follow agrees.
func TestDeferredPagesEqualWalk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addTiedServices(t, f, 40)
	addServicesOf(t, f, "acme", 300)
	for _, who := range []string{"admin", "fleetco", "northwind", "acme", "tailspin", "hooli"} {
		scope := f.scope(t, who, "services")
		for _, desc := range []bool{false, true} {
			for _, per := range []int{1, 3, 7, 50} {
				t.Run(fmt.Sprintf("%s/desc=%v/per=%d", who, desc, per), func(t *testing.T) {
					// One row a page only for the first pages: the rest is
					// the same statement with another OFFSET.
					last := 1 << 30
					if per == 1 {
						last = 25
					}
					seen := 0
					for page := 1; page <= last; page++ {
						req := storage.ListRequest{Page: page, PerPage: per, Desc: desc, Sort: storage.Services.ID()}
						walk, walkMore, err := storage.ServicePageIDs(ctx, f.s, scope, req, false)
						if err != nil {
							t.Fatal(err)
						}
						deferred, deferredMore, err := storage.ServicePageIDs(ctx, f.s, scope, req, true)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(walk, deferred) || walkMore != deferredMore {
							t.Fatalf("page %d: deferred %v (more %v), walk %v (more %v)", page, deferred, deferredMore, walk, walkMore)
						}
						seen += len(walk)
						if len(walk) == 0 {
							break
						}
					}
					if who != "hooli" && seen == 0 {
						t.Fatalf("%s listed no service: the comparison proved nothing", who)
					}
				})
			}
		}
	}
}

// TestPageShape: List reads a page of a manager's tree as a deferred join
// when the tree's rows are sparse in the table and the page deep enough
// for the walk to cost more (deferPage), and walks otherwise: for a
// caller whose rows an index returns in id order (one account, the
// admin), and for a request with filters, search, a sort or a cursor.
func TestPageShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 3000)
	northwind := f.scope(t, "northwind", "services")
	name, _ := storage.Services.Field("name")
	odo, _ := storage.Services.Field("odo")
	cases := []struct {
		name  string
		scope string
		req   storage.ListRequest
		want  bool
	}{
		{"northwind's few rows among acme's thousands, page 1", "northwind", storage.ListRequest{Page: 1, PerPage: 50}, true},
		{"northwind, page 2 descending", "northwind", storage.ListRequest{Page: 2, PerPage: 2, Desc: true}, true},
		{"northwind, the id as the sort (the api's default)", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Sort: storage.Services.ID()}, true},
		{"fleetco's tree holds most rows, page 1", "fleetco", storage.ListRequest{Page: 1, PerPage: 50}, false},
		{"fleetco, far past its rows", "fleetco", storage.ListRequest{Page: 200, PerPage: 50}, true},
		{"northwind searched", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Search: "oil"}, false},
		{"northwind filtered", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Filters: []storage.Filter{{Field: odo, Value: true}}}, false},
		{"northwind by name", "northwind", storage.ListRequest{Page: 1, PerPage: 50, Sort: name}, false},
		{"northwind after a cursor", "northwind", storage.ListRequest{Page: 1, PerPage: 50, After: &storage.Cursor{Sort: storage.Services.ID(), ID: 1}}, false},
		{"one account", "tailspin", storage.ListRequest{Page: 3, PerPage: 1}, false},
		{"the admin", "admin", storage.ListRequest{Page: 1000, PerPage: 50}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := f.scope(t, tc.scope, "services")
			got, err := storage.PageShape(ctx, f.s, s, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("deferred %v, want %v", got, tc.want)
			}
		})
	}
	// What List returns in the deferred shape: every page of northwind
	// is the walk's, with the total of the tree.
	all, _, err := storage.ServicePageIDs(ctx, f.s, northwind, storage.ListRequest{Page: 1, PerPage: 500}, false)
	if err != nil || len(all) < 3 {
		t.Fatalf("northwind's services %v, %v: want a few", all, err)
	}
	for page := 1; (page-1)*2 < len(all); page++ {
		p, err := storage.List(ctx, f.s, northwind, storage.Services, storage.ListRequest{Page: page, PerPage: 2})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, it := range p.Items {
			ids = append(ids, it.ServiceID)
		}
		if want := all[(page-1)*2 : min(page*2, len(all))]; !slices.Equal(ids, want) || p.Total != int64(len(all)) {
			t.Errorf("page %d: %v of %d, want %v of %d", page, ids, p.Total, want, len(all))
		}
	}
}
