package storage_test

import (
	"context"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// BenchmarkSearchPage: the storage call of GET /services?search=<term>
// &page=2&per_page=50 on the generated data set (FLEET_BENCH_DATABASE_URL,
// see benchDatabase) for the admin (the harness's admin_search: the term
// "replacement" matches 220,813 of the 1,000,000 services) and the largest
// manager, with nothing written meanwhile: the page and its total, which
// the kept totals (totals.go) answer from the version of the scope's rows
// after the first call (docs/performance.md, "Search totals").
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
			var total int64
			for b.Loop() {
				page, err := storage.List(ctx, s, scope, storage.Services, storage.ListRequest{Page: 2, PerPage: 50, Search: c.term})
				if err != nil {
					b.Fatal(err)
				}
				total = page.Total
			}
			b.ReportMetric(float64(total), "total")
		})
	}
}
