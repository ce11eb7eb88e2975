package storage_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/internal/paging"
)

// TestListSpanNamesShapeAndTotal: List names on the request's span the
// shape it read the page in and where the total came from
// (paging.Explain: fleet.paging.shape, fleet.paging.total_source), one
// case a row of the tables: a sparse tree read by key from the ids read
// instead of a deferred join, then from the ids kept (peeked), a user's
// own rows walked with the counters' total, a search of them with the kept
// total, a cursor's keyset page, and a last page that tells its total.
func TestListSpanNamesShapeAndTotal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	addServicesOf(t, f, "acme", 3000)
	s := storage.NewStore(f.db.DB)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	id := storage.Services.ID()
	cases := []struct {
		name, who    string
		req          storage.ListRequest
		shape, total string
	}{
		{"a sparse tree, first read", "northwind", storage.ListRequest{Page: 1, PerPage: 1}, "ids", "kept_ids"},
		{"a sparse tree, ids kept", "northwind", storage.ListRequest{Page: 2, PerPage: 1}, "ids", "kept_ids"},
		{"one account's rows", "acme", storage.ListRequest{Page: 2, PerPage: 50}, "walk", "counters"},
		{"one account's search", "acme", storage.ListRequest{Page: 2, PerPage: 50, Search: "bulk"}, "walk", "kept"},
		{"after a cursor", "acme", storage.ListRequest{Page: 1, PerPage: 50, Sort: id, After: &storage.Cursor{Sort: id, ID: 1}}, "keyset", "counters"},
		{"the last page", "acme", storage.ListRequest{Page: 1, PerPage: 500, Search: "bulk 2999"}, "walk", "page"},
	}
	for _, tc := range cases {
		scope := f.scope(t, tc.who, "services")
		sctx, span := tp.Tracer("test").Start(ctx, tc.name)
		_, err := storage.List(sctx, s, scope, storage.Services, tc.req)
		span.End()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ended := rec.Ended()
		got := map[string]string{}
		for _, a := range ended[len(ended)-1].Attributes() {
			got[string(a.Key)] = a.Value.AsString()
		}
		if got[string(paging.AttrShape)] != tc.shape || got[string(paging.AttrTotalSource)] != tc.total {
			t.Errorf("%s: span names shape %q, total %q; want %q, %q", tc.name,
				got[string(paging.AttrShape)], got[string(paging.AttrTotalSource)], tc.shape, tc.total)
		}
	}
}
