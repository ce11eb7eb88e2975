package storage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/internal/paging"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestListPageGolden pins the page statement of a list (pageQuery) for the
// manager (account 7, manager 3): an OFFSET page, and the keyset
// condition after a cursor for each kind of sort value, in both
// directions, after a value and after a NULL of a nullable column
// (docs/decisions.md, "Deep pages"), and a deep page read as a deferred
// join (paging.DeferPage). Run with -update to rewrite.
func TestListPageGolden(t *testing.T) {
	ctx := context.Background()
	e, s := goldenWorld(t)
	p := goldenPrincipal(tenancy.Manager, "reports", "event_notifications")
	field := func(d *Descriptor, name string) Field {
		f, ok := d.Field(name)
		if !ok {
			t.Fatalf("%s has no field %s", d.resource, name)
		}
		return f
	}
	day, _ := ParseDate("2024-03-01")
	at := time.Date(2026, 1, 5, 7, 0, 0, 123456000, time.UTC)
	cases := []struct {
		name  string
		d     *Descriptor
		req   ListRequest
		shape shape
	}{
		{"page 100, deferred", Services.Descriptor, ListRequest{Page: 100, PerPage: 50}, shape{deferred: true}},
		{"page 2 descending, deferred", Events.Descriptor, ListRequest{Page: 2, PerPage: 20, Desc: true}, shape{deferred: true}},
		{"page 2 of a search, by key", Services.Descriptor, ListRequest{Page: 2, PerPage: 2, Search: "oil"}, shape{ids: []int64{3, 5, 8, 13, 21, 34, 55}}},
		{"page 2 of a search descending, by key", Services.Descriptor, ListRequest{Page: 2, PerPage: 2, Search: "oil", Desc: true}, shape{ids: []int64{3, 5, 8, 13, 21, 34, 55}}},
		{"page 3 by name, searched", Services.Descriptor, ListRequest{Page: 3, PerPage: 50, Sort: field(Services.Descriptor, "name"), Search: "oil"}, shape{}},
		{"after an id", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: Services.ID(), After: &Cursor{Sort: Services.ID(), ID: 41}}, shape{}},
		{"after an id, descending", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: Services.ID(), Desc: true, After: &Cursor{Sort: Services.ID(), Desc: true, ID: 41}}, shape{}},
		{"after a name, filtered", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Services.Descriptor, "name"),
			Filters: []Filter{{Field: field(Services.Descriptor, "odo"), Value: true}},
			After:   &Cursor{Sort: field(Services.Descriptor, "name"), Value: "Oil change", ID: 41}}, shape{}},
		{"after an integer, descending", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Services.Descriptor, "odo_interval"), Desc: true,
			After: &Cursor{Sort: field(Services.Descriptor, "odo_interval"), Desc: true, Value: int64(10000), ID: 41}}, shape{}},
		{"after a boolean", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Services.Descriptor, "odo"),
			After: &Cursor{Sort: field(Services.Descriptor, "odo"), Value: false, ID: 41}}, shape{}},
		{"after a date", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Services.Descriptor, "days_last"),
			After: &Cursor{Sort: field(Services.Descriptor, "days_last"), Value: day, ID: 41}}, shape{}},
		{"after a date, descending", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Services.Descriptor, "days_last"), Desc: true,
			After: &Cursor{Sort: field(Services.Descriptor, "days_last"), Desc: true, Value: day, ID: 41}}, shape{}},
		{"after a NULL date", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Services.Descriptor, "days_last"),
			After: &Cursor{Sort: field(Services.Descriptor, "days_last"), ID: 41}}, shape{}},
		{"after a NULL date, descending", Services.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Services.Descriptor, "days_last"), Desc: true,
			After: &Cursor{Sort: field(Services.Descriptor, "days_last"), Desc: true, ID: 41}}, shape{}},
		{"after a timestamp", Reports.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Reports.Descriptor, "dt_schedule_d"),
			After: &Cursor{Sort: field(Reports.Descriptor, "dt_schedule_d"), Value: at, ID: 41}}, shape{}},
		{"after a list", Reports.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Reports.Descriptor, "imei"),
			After: &Cursor{Sort: field(Reports.Descriptor, "imei"), Value: StringList{"356938035643809", "it's"}, ID: 41}}, shape{}},
		{"after an object", Events.Descriptor, ListRequest{Page: 1, PerPage: 50, Sort: field(Events.Descriptor, "day_time"),
			After: &Cursor{Sort: field(Events.Descriptor, "day_time"), Value: JSONObject{"from": "06:00", "to": "20:00"}, ID: 41}}, shape{}},
	}
	var b strings.Builder
	for _, c := range cases {
		scope, err := e.Scope(ctx, policy.NewInput(p, "GET", "/"+string(c.d.resource), goldenDay), c.d.resource)
		if err != nil {
			t.Fatal(err)
		}
		compiled, err := s.compiledFor(scope, c.d)
		if err != nil {
			t.Fatal(err)
		}
		start := func(model any, forCount bool) (*bun.SelectQuery, error) {
			if forCount {
				return s.selectIn(c.d, compiled.count, model), nil
			}
			return s.selectIn(c.d, compiled.page, model), nil
		}
		if c.shape.ids != nil {
			c.shape.current = s.sameVersion(compiled, paging.Version{Started: "2026-01-05 07:00:00+00", Generation: 3, Changes: 41})
		}
		q, _, err := pageQuery(c.d, c.req, start, modelOf(c.d), c.shape)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b.WriteString("-- manager (account 7, manager 3), " + string(c.d.resource) + ": " + c.name + "\n" + q.String() + "\n\n")
	}
	compareGolden(t, filepath.Join("testdata", "golden", "list_pages.sql"), b.String())
}
