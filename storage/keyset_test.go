package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// keysetWalk lists every row of scope that req selects with After, per
// rows at a time from the first page until Next is nil, and returns their
// ids. Every page must tell the whole list's total; between pages, between
// (when not nil) runs with the page number just read.
func keysetWalk(t *testing.T, f listFixture, scope policy.Scope, req storage.ListRequest, per int, between func(page int)) []int64 {
	t.Helper()
	ctx := context.Background()
	req.Page, req.PerPage, req.After = 1, per, nil
	var ids []int64
	for page := 1; ; page++ {
		p, err := storage.List(ctx, f.s, scope, storage.Services, req)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if between == nil {
			full := req
			full.After, full.PerPage = nil, 500
			whole, err := storage.List(ctx, f.s, scope, storage.Services, full)
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != whole.Total {
				t.Fatalf("page %d: total %d, the whole list has %d", page, p.Total, whole.Total)
			}
		}
		for _, s := range p.Items {
			ids = append(ids, s.ServiceID)
		}
		if p.Next == nil {
			return ids
		}
		if len(p.Items) != per || page > 1000 {
			t.Fatalf("page %d: %d items with a next cursor", page, len(p.Items))
		}
		if between != nil {
			between(page)
		}
		req.After = p.Next
	}
}

// serviceIDs lists the ids of every row of scope that req selects, in one page.
func serviceIDs(t *testing.T, f listFixture, scope policy.Scope, req storage.ListRequest) []int64 {
	t.Helper()
	req.Page, req.PerPage, req.After = 1, 500, nil
	p, err := storage.List(context.Background(), f.s, scope, storage.Services, req)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, s := range p.Items {
		ids = append(ids, s.ServiceID)
	}
	return ids
}

// addTiedServices adds n services over every device of the demo data
// (each to its owner) whose names come in runs of equal values (one name
// for half the devices at a time) and whose days_last is NULL for every
// third and one of two days otherwise: long runs of ties and NULLs in both
// sort fields.
func addTiedServices(t *testing.T, f listFixture, n int) {
	t.Helper()
	_, err := f.db.ExecContext(context.Background(), `
WITH o AS (SELECT imei, account_id, row_number() OVER (ORDER BY imei) - 1 AS k, count(*) OVER () AS m FROM objects)
INSERT INTO services (account_id, imei, name, days_last, odo, odo_interval)
SELECT o.account_id, o.imei, 'Tie ' || (g % 2) || ' #' || (g / o.m),
       CASE WHEN g % 3 = 0 THEN NULL WHEN g % 2 = 0 THEN DATE '2025-01-01' ELSE DATE '2024-01-01' END,
       g % 2 = 0, (g % 4) * 1000
FROM generate_series(0, ? - 1) AS g JOIN o ON o.k = g % o.m`, n)
	if err != nil {
		t.Fatal(err)
	}
}

// TestKeysetWalkEqualsPages: walking with a cursor, a few rows at a time,
// gives exactly the one-page list for sorts with ties and NULLs (days_last
// ascending puts NULLs last, descending first, as PostgreSQL's ORDER BY),
// with filters and search, in both directions, and each page tells the
// whole list's total.
func TestKeysetWalkEqualsPages(t *testing.T) {
	t.Parallel()
	f := newListFixture(t)
	addTiedServices(t, f, 60)
	odo, _ := storage.Services.Field("odo")
	for _, who := range []string{"admin", "acme", "fleetco"} {
		scope := f.scope(t, who, "services")
		for _, sort := range []string{"service_id", "name", "days_last", "odo", "odo_interval", "imei"} {
			for _, desc := range []bool{false, true} {
				for _, variant := range []string{"all", "filter", "search"} {
					req := storage.ListRequest{Sort: fieldOf(sort), Desc: desc}
					switch variant {
					case "filter":
						req.Filters = []storage.Filter{{Field: odo, Value: true}}
					case "search":
						req.Search = "tie"
					}
					t.Run(fmt.Sprintf("%s/%s/%v/%s", who, sort, desc, variant), func(t *testing.T) {
						want := serviceIDs(t, f, scope, req)
						for _, per := range []int{1, 4, 7} {
							if got := keysetWalk(t, f, scope, req, per, nil); !slices.Equal(got, want) {
								t.Fatalf("per %d: walk %v, want %v", per, got, want)
							}
						}
					})
				}
			}
		}
	}
}

// TestKeysetWalkUnderWrites: rows inserted and deleted during a walk. A
// row deleted before the walk reaches it is never listed, a row inserted
// after the position the walk has reached is listed once, one inserted
// before it is not, and no row is listed twice or lost.
func TestKeysetWalkUnderWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addTiedServices(t, f, 30)
	admin := f.scope(t, "admin", "services")
	for _, desc := range []bool{false, true} {
		t.Run(fmt.Sprint(desc), func(t *testing.T) {
			req := storage.ListRequest{Sort: fieldOf("days_last"), Desc: desc}
			before := serviceIDs(t, f, admin, req)
			var inserted, deleted []int64
			got := keysetWalk(t, f, admin, req, 5, func(page int) {
				if page > 3 {
					return
				}
				// Delete a row the walk has not reached: one of the last of
				// the list before the walk.
				victim := before[len(before)-1-len(deleted)]
				if _, err := f.db.ExecContext(ctx, `DELETE FROM services WHERE service_id = ?`, victim); err != nil {
					t.Fatal(err)
				}
				deleted = append(deleted, victim)
				// Insert two rows: one NULL day and one far in the past;
				// depending on the direction one sorts before the walk's
				// position and one after.
				for _, day := range []any{nil, "1990-01-01"} {
					var id int64
					err := f.db.QueryRowContext(ctx, `
INSERT INTO services (account_id, imei, name, days_last)
SELECT account_id, imei, 'Inserted ' || ?, ?::date FROM services WHERE name LIKE 'Tie%' ORDER BY service_id LIMIT 1
RETURNING service_id`, fmt.Sprint(desc, page, day), day).Scan(&id)
					if err != nil {
						t.Fatal(err)
					}
					inserted = append(inserted, id)
				}
			})
			after := serviceIDs(t, f, admin, req)
			seen := map[int64]int{}
			for _, id := range got {
				seen[id]++
				if seen[id] > 1 {
					t.Errorf("service %d listed twice", id)
				}
			}
			for _, id := range before {
				if !slices.Contains(deleted, id) && seen[id] != 1 {
					t.Errorf("service %d, there throughout the walk, was not listed", id)
				}
			}
			for _, id := range deleted {
				if seen[id] != 0 {
					t.Errorf("deleted service %d was listed", id)
				}
			}
			// Every row listed exists now or was there before; the walk is
			// the final list minus the inserted rows it had passed.
			var want []int64
			for _, id := range after {
				if seen[id] == 1 {
					want = append(want, id)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("walk %v is not in the final list's order %v", got, want)
			}
			listed := 0
			for _, id := range inserted {
				listed += seen[id]
			}
			if listed == 0 || listed == len(inserted) {
				t.Errorf("%d of the %d inserted rows listed: want those after the walk's position only", listed, len(inserted))
			}
		})
	}
}

// TestKeysetCursorHasNoScope: a cursor made on one tenant's list only sets
// a position in another's; its rows are the other's, as ORDER BY puts them.
func TestKeysetCursorHasNoScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	req := storage.ListRequest{Page: 1, PerPage: 1, Sort: fieldOf("name")}
	acme := f.scope(t, "acme", "services")
	p, err := storage.List(ctx, f.s, acme, storage.Services, req)
	if err != nil || p.Next == nil {
		t.Fatalf("acme's first page: %+v, %v", p, err)
	}
	globex := f.scope(t, "globex", "services")
	req.After, req.PerPage = p.Next, 500
	q, err := storage.List(ctx, f.s, globex, storage.Services, req)
	if err != nil {
		t.Fatal(err)
	}
	globexOwn := serviceIDs(t, f, globex, storage.ListRequest{Sort: fieldOf("name")})
	for _, s := range q.Items {
		if !slices.Contains(globexOwn, s.ServiceID) {
			t.Errorf("globex got acme's service %d", s.ServiceID)
		}
	}
	if q.Total != int64(len(globexOwn)) {
		t.Errorf("total %d, globex has %d", q.Total, len(globexOwn))
	}
}

// TestKeysetBadRequests: a cursor of another order, one with a page beyond
// 1, and a value of the wrong type are requests the api does not make.
func TestKeysetBadRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	admin := f.scope(t, "admin", "services")
	name, days := fieldOf("name"), fieldOf("days_last")
	for _, req := range []storage.ListRequest{
		{Page: 2, PerPage: 5, Sort: name, After: &storage.Cursor{Sort: name, Value: "x", ID: 1}},
		{Page: 1, PerPage: 5, Sort: name, After: &storage.Cursor{Sort: name, Desc: true, Value: "x", ID: 1}},
		{Page: 1, PerPage: 5, Sort: name, After: &storage.Cursor{Sort: days, Value: "x", ID: 1}},
		{Page: 1, PerPage: 5, Sort: days, After: &storage.Cursor{Sort: days, Value: "2024-01-01", ID: 1}},
		{Page: 1, PerPage: 5, Sort: name, After: &storage.Cursor{Sort: name, Value: int64(3), ID: 1}},
	} {
		if _, err := storage.List(ctx, f.s, admin, storage.Services, req); !errors.Is(err, storage.ErrBadListRequest) {
			t.Errorf("%+v: %v, want ErrBadListRequest", req.After, err)
		}
	}
}
