package storage_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// BenchmarkSearchPage: the storage call of GET /services?search=<term>
// &page=2&per_page=50 on the generated data set (FLEET_BENCH_DATABASE_URL,
// see benchDatabase) for the admin (the harness's admin_search: the term
// "replacement" matches 220,813 of the 1,000,000 services) and the largest
// manager, with nothing written meanwhile: the page and its total, which
// the kept totals (totals.go) answer from the version of the scope's rows
// after the first page, which is listed before the timed loop
// (docs/performance.md, "Search totals").
func BenchmarkSearchPage(b *testing.B) {
	s, _ := benchDatabase(b)
	e := newEngine(b)
	for _, c := range []struct{ who, term string }{
		{"gen-admin", "replacement"},
		{"gen-admin", "Annual"},
		{"gen-manager-001", "replacement"},
	} {
		b.Run(c.who+"/"+c.term, func(b *testing.B) {
			scope := scopeOf(b, e, s, c.who, storage.Services.Resource())
			ctx := context.Background()
			req := storage.ListRequest{Page: 1, PerPage: 50, Search: c.term}
			// page 1 first, as a client walks: it counts (and keeps)
			if _, err := storage.List(ctx, s, scope, storage.Services, req); err != nil {
				b.Fatal(err)
			}
			req.Page = 2
			var total int64
			for b.Loop() {
				page, err := storage.List(ctx, s, scope, storage.Services, req)
				if err != nil {
					b.Fatal(err)
				}
				total = page.Total
			}
			b.ReportMetric(float64(total), "total")
			counted, reused := storage.KeptTotals(s)
			b.ReportMetric(float64(counted), "counted")
			b.ReportMetric(float64(reused), "reused")
		})
	}
}

// BenchmarkServiceRename: an update of a searched column (a service's
// name) on random services of the data set, one statement and commit each
// (commit) or all in one transaction committed at the end (in_tx): the
// row trigger count_changes (migration 20270110000001) fires on each. The
// names are restored afterwards.
func BenchmarkServiceRename(b *testing.B) {
	_, db := benchDatabase(b)
	ctx := context.Background()
	var ids []int64
	if err := db.NewRaw(`SELECT service_id FROM services WHERE service_id % 97 = 0 ORDER BY service_id`).Scan(ctx, &ids); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := db.ExecContext(ctx, `UPDATE services SET name = left(name, -length(' (renamed)')) WHERE name LIKE '% (renamed)'`); err != nil {
			b.Error(err)
		}
	})
	const rename = `UPDATE services SET name = CASE WHEN name LIKE '% (renamed)' THEN left(name, -length(' (renamed)')) ELSE name || ' (renamed)' END WHERE service_id = ?`
	benchUpdates(b, db, rename, 7, func(r *rand.Rand) []any { return []any{ids[r.IntN(len(ids))]} })
}
