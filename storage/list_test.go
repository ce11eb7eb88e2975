package storage_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// listFixture is the demo data with the policy, for list tests.
type listFixture struct {
	s  *storage.Store
	db *storagetest.DB
	e  *policy.Engine
}

func newListFixture(t *testing.T) listFixture {
	t.Helper()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	return listFixture{s: s, db: db, e: newEngine(t)}
}

func (f listFixture) scope(t *testing.T, username, resource string) policy.Scope {
	t.Helper()
	return scopeOf(t, f.e, f.s, username, policy.Resource(resource))
}

// accountIDs returns the ids of the named demo accounts.
func (f listFixture) accountIDs(t *testing.T, usernames ...string) []int64 {
	t.Helper()
	var ids []int64
	for _, u := range usernames {
		ids = append(ids, principalOf(t, f.s, u).Account.ID)
	}
	return ids
}

// all is a request for every row, ordered by the field sort of the
// resource that has it (the id names the resource).
func all(sort string) storage.ListRequest {
	return storage.ListRequest{Page: 1, PerPage: 500, Sort: fieldOf(sort)}
}

// fieldOf returns the listed field name: of services, else reports, else
// events (the tests' requests name fields of the resource they list).
func fieldOf(name string) storage.Field {
	for _, d := range []*storage.Descriptor{storage.Services.Descriptor, storage.Reports.Descriptor, storage.Events.Descriptor} {
		if f, ok := d.Field(name); ok {
			return f
		}
	}
	return storage.Field{Name: name}
}

// filter is the exact-match filter on the field name of m.
func filter[T any](m storage.Model[T], name string, v any) storage.Filter {
	f, ok := m.Field(name)
	if !ok {
		f = storage.Field{Name: name}
	}
	return storage.Filter{Field: f, Value: v}
}

func TestListIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	fleetco := []string{"fleetco", "acme", "globex", "umbrella", "hooli", "soylent"}
	tests := []struct {
		username string
		// owners are the accounts whose rows are visible; nil: none.
		owners []string
		all    bool
	}{
		{username: "admin", all: true},
		{username: "fleetco", owners: fleetco},
		{username: "northwind", owners: []string{"northwind", "tailspin", "contoso"}},
		{username: "acme", owners: []string{"acme"}},
		{username: "tailspin", owners: []string{"tailspin"}},
		{username: "umbrella", owners: []string{"umbrella"}}, // read-only still reads
		{username: "hooli"},                                  // inactive
		{username: "soylent"},                                // expired
	}
	for _, tc := range tests {
		t.Run(tc.username, func(t *testing.T) {
			owners := f.accountIDs(t, tc.owners...)
			for _, table := range []string{"services", "reports", "events"} {
				q := f.db.NewSelect().Table(table)
				if !tc.all {
					q = q.Where("account_id IN (?)", bun.List(append(owners, -1)))
				}
				want, err := q.Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got := f.listOwners(t, tc.username, table)
				if len(got) != int(want) {
					t.Errorf("%s: %d rows, want %d", table, len(got), want)
				}
				for _, owner := range got {
					if !tc.all && !slices.Contains(owners, owner) {
						t.Errorf("%s: a row of account %d is visible", table, owner)
					}
				}
			}
		})
	}
	t.Run("subaccount sees only granted devices", func(t *testing.T) {
		services, err := storage.List(ctx, f.s, f.scope(t, "acme-night", "services"), storage.Services, all("service_id"))
		if err != nil {
			t.Fatal(err)
		}
		if services.Total != 3 {
			t.Errorf("%d services, want Truck 7's 3", services.Total)
		}
		for _, s := range services.Items {
			if s.IMEI != "356938035643809" {
				t.Errorf("service %q of device %s is visible", s.Name, s.IMEI)
			}
		}
		reports, err := storage.List(ctx, f.s, f.scope(t, "acme-night", "reports"), storage.Reports, all("report_id"))
		if err != nil {
			t.Fatal(err)
		}
		// "Fleet overspeed" names Truck 7 and Van 12: not every device is granted.
		if len(reports.Items) != 1 || reports.Items[0].Name != "Truck 7 daily stops" {
			t.Errorf("reports %+v, want only Truck 7 daily stops", reports.Items)
		}
		events, err := storage.List(ctx, f.s, f.scope(t, "acme-night", "events"), storage.Events, all("event_id"))
		if err != nil {
			t.Fatal(err)
		}
		if events.Total != 0 {
			t.Errorf("%d events without the event_notifications privilege", events.Total)
		}
	})
}

// listOwners lists every row of table for username and returns the owning
// account of each.
func (f listFixture) listOwners(t *testing.T, username, table string) []int64 {
	t.Helper()
	ctx := context.Background()
	var owners []int64
	switch table {
	case "services":
		p, err := storage.List(ctx, f.s, f.scope(t, username, table), storage.Services, all("service_id"))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p.Items {
			owners = append(owners, x.AccountID)
		}
	case "reports":
		p, err := storage.List(ctx, f.s, f.scope(t, username, table), storage.Reports, all("report_id"))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p.Items {
			owners = append(owners, x.AccountID)
		}
	case "events":
		p, err := storage.List(ctx, f.s, f.scope(t, username, table), storage.Events, all("event_id"))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range p.Items {
			owners = append(owners, x.AccountID)
		}
	}
	return owners
}

func TestListSearchIsLiteral(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	acme := f.accountIDs(t, "acme")[0]
	globex := f.accountIDs(t, "globex")[0]
	for _, name := range []string{`50% off_road\x`, `50x-ray`, `O'Neil check`, `back\slash`} {
		if _, err := f.db.NewInsert().Model(&storage.Service{AccountID: acme, IMEI: "356938035643817", Name: name}).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Another tenant's row that matches every search below must never show.
	if _, err := f.db.NewInsert().Model(&storage.Service{AccountID: globex, IMEI: "861073032104569", Name: `50% off_road\x O'Neil 50_`}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	scope := f.scope(t, "acme", "services")
	tests := []struct {
		search string
		want   []string
	}{
		{`0% o`, []string{`50% off_road\x`}},
		{`50_`, nil},
		{`%`, []string{`50% off_road\x`}},
		{`_road`, []string{`50% off_road\x`}},
		{`d\x`, []string{`50% off_road\x`}},
		{`\`, []string{`50% off_road\x`, `back\slash`}},
		{`'`, []string{`O'Neil check`}},
		{`o'NEIL`, []string{`O'Neil check`}},
		{`50x`, []string{`50x-ray`}},
		{`643825`, []string{"Hydraulic service", "Safety check"}}, // the imei matches
	}
	for _, tc := range tests {
		t.Run(tc.search, func(t *testing.T) {
			req := all("name")
			req.Search = tc.search
			p, err := storage.List(ctx, f.s, scope, storage.Services, req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range p.Items {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, tc.want) || p.Total != int64(len(tc.want)) {
				t.Errorf("got %q (total %d), want %q", got, p.Total, tc.want)
			}
		})
	}
	t.Run("reports and events search name and type", func(t *testing.T) {
		req := all("report_id")
		req.Search = "OVERSPEED"
		reports, err := storage.List(ctx, f.s, f.scope(t, "acme", "reports"), storage.Reports, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(reports.Items) != 1 || reports.Items[0].Name != "Fleet overspeed" {
			t.Errorf("reports %+v", reports.Items)
		}
		req = all("event_id")
		req.Search = "zone_"
		events, err := storage.List(ctx, f.s, f.scope(t, "acme", "events"), storage.Events, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(events.Items) != 1 || events.Items[0].Name != "Depot geofence" {
			t.Errorf("events %+v", events.Items)
		}
	})
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	date, err := storage.ParseDate("2024-03-01")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 5, 6, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		resource string
		filters  []storage.Filter
		want     []string
	}{
		{"int", "services", []storage.Filter{filter(storage.Services, "odo_interval", int64(10000))}, []string{"Oil change", "Oil change"}},
		{"int and text", "services", []storage.Filter{filter(storage.Services, "odo_interval", int64(10000)), filter(storage.Services, "imei", "356938035643809")}, []string{"Oil change"}},
		{"bool", "services", []storage.Filter{filter(storage.Services, "engh", true)}, []string{"Brake check", "Hydraulic service", "Refrigeration unit"}},
		{"date", "services", []storage.Filter{filter(storage.Services, "days_last", date)}, []string{"Annual inspection"}},
		{"text", "reports", []storage.Filter{filter(storage.Reports, "format", "pdf")}, []string{"Truck 7 daily stops", "Reefer temperatures"}},
		{"text list contains", "reports", []storage.Filter{filter(storage.Reports, "imei", "356938035643817")}, []string{"Fleet overspeed"}},
		{"text list contains, several", "reports", []storage.Filter{filter(storage.Reports, "imei", "356938035643809")}, []string{"Truck 7 daily stops", "Fleet overspeed"}},
		{"time", "reports", []storage.Filter{filter(storage.Reports, "dt_schedule_d", at)}, []string{"Truck 7 daily stops"}},
		{"text list of days", "events", []storage.Filter{filter(storage.Events, "week_days", "sat")}, []string{"Truck 7 overspeed"}},
		{"object", "events", []storage.Filter{filter(storage.Events, "day_time", map[string]any{"to": "20:00", "from": "06:00"})}, []string{"Depot geofence"}},
		{"int on events", "events", []storage.Filter{filter(storage.Events, "sms_template_id", int64(3))}, []string{"Reefer door open"}},
		{"no match", "events", []storage.Filter{filter(storage.Events, "type", "overspeed"), filter(storage.Events, "active", false)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// fleetco sees acme, globex and umbrella; tailspin's rows never.
			scope := f.scope(t, "fleetco", tc.resource)
			var got []string
			var total int64
			switch tc.resource {
			case "services":
				req := all("service_id")
				req.Filters = tc.filters
				p, err := storage.List(ctx, f.s, scope, storage.Services, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range p.Items {
					got = append(got, x.Name)
				}
				total = p.Total
			case "reports":
				req := all("report_id")
				req.Filters = tc.filters
				p, err := storage.List(ctx, f.s, scope, storage.Reports, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range p.Items {
					got = append(got, x.Name)
				}
				total = p.Total
			case "events":
				req := all("event_id")
				req.Filters = tc.filters
				p, err := storage.List(ctx, f.s, scope, storage.Events, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range p.Items {
					got = append(got, x.Name)
				}
				total = p.Total
			}
			if !slices.Equal(got, tc.want) || total != int64(len(tc.want)) {
				t.Errorf("got %q (total %d), want %q", got, total, tc.want)
			}
		})
	}
	t.Run("unknown filter", func(t *testing.T) {
		req := all("service_id")
		req.Filters = []storage.Filter{filter(storage.Services, "account_id", int64(1))}
		if _, err := storage.List(ctx, f.s, f.scope(t, "admin", "services"), storage.Services, req); !errors.Is(err, storage.ErrBadListRequest) {
			t.Fatalf("got %v, want ErrBadListRequest", err)
		}
	})
}

func TestListSortAndPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	admin := f.scope(t, "admin", "services")
	list := func(t *testing.T, req storage.ListRequest) storage.Page[storage.Service] {
		t.Helper()
		p, err := storage.List(ctx, f.s, admin, storage.Services, req)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, desc := range []bool{false, true} {
		t.Run(map[bool]string{false: "asc", true: "desc"}[desc], func(t *testing.T) {
			req := all("name")
			req.Desc = desc
			items := list(t, req).Items
			if len(items) != 14 {
				t.Fatalf("%d services", len(items))
			}
			oil := 0
			for i := 1; i < len(items); i++ {
				a, b := items[i-1], items[i]
				byName := a.Name < b.Name
				byID := a.ServiceID < b.ServiceID
				if desc {
					byName, byID = a.Name > b.Name, a.ServiceID > b.ServiceID
				}
				if !(byName || a.Name == b.Name && byID) {
					t.Errorf("%q/%d before %q/%d", a.Name, a.ServiceID, b.Name, b.ServiceID)
				}
				if a.Name == "Oil change" && b.Name == "Oil change" {
					oil++
				}
			}
			if oil != 3 {
				t.Errorf("%d ties on Oil change, want 3 (4 records)", oil)
			}
		})
	}
	t.Run("pages", func(t *testing.T) {
		var seen []int64
		for page := 1; page <= 3; page++ {
			p := list(t, storage.ListRequest{Page: page, PerPage: 5, Sort: fieldOf("odo_interval"), Desc: true})
			if p.Total != 14 {
				t.Errorf("page %d: total %d", page, p.Total)
			}
			for _, s := range p.Items {
				seen = append(seen, s.ServiceID)
			}
		}
		slices.Sort(seen)
		if len(slices.Compact(seen)) != 14 {
			t.Errorf("pages overlap or miss rows: %v", seen)
		}
	})
	t.Run("page past the end", func(t *testing.T) {
		p := list(t, storage.ListRequest{Page: 9, PerPage: 5, Sort: fieldOf("service_id")})
		if len(p.Items) != 0 || p.Items == nil || p.Total != 14 {
			t.Errorf("got %d items (nil %v), total %d; want an empty list, total 14", len(p.Items), p.Items == nil, p.Total)
		}
	})
	t.Run("empty first page", func(t *testing.T) {
		req := storage.ListRequest{Page: 1, PerPage: 5, Sort: fieldOf("service_id"), Search: "no such service"}
		if p := list(t, req); len(p.Items) != 0 || p.Total != 0 {
			t.Errorf("got %+v", p)
		}
	})
}

func TestEventByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	ids := map[string]int64{}
	var events []storage.Event
	if err := f.db.NewSelect().Model(&events).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		ids[e.Name] = e.EventID
	}
	tests := []struct {
		username, event string
		found           bool
	}{
		{"admin", "Bus route deviation", true},
		{"acme", "Truck 7 overspeed", true},
		{"acme", "Reefer door open", false},
		{"fleetco", "Reefer door open", true},
		{"fleetco", "Bus route deviation", false},
		{"northwind", "Bus route deviation", true},
		{"tailspin", "Depot geofence", false},
		{"acme-night", "Truck 7 overspeed", false}, // no event_notifications privilege
		{"hooli", "Truck 7 overspeed", false},
	}
	for _, tc := range tests {
		t.Run(tc.username+"/"+tc.event, func(t *testing.T) {
			ev, err := f.s.EventByID(ctx, f.scope(t, tc.username, "events"), ids[tc.event])
			switch {
			case tc.found && (err != nil || ev.Name != tc.event):
				t.Errorf("got %q, %v", ev.Name, err)
			case !tc.found && !errors.Is(err, storage.ErrNotFound):
				t.Errorf("got %q, %v; want ErrNotFound", ev.Name, err)
			}
		})
	}
	t.Run("no such event", func(t *testing.T) {
		if _, err := f.s.EventByID(ctx, f.scope(t, "admin", "events"), 999999); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("scope of another resource", func(t *testing.T) {
		if _, err := f.s.EventByID(ctx, f.scope(t, "admin", "reports"), ids["Truck 7 overspeed"]); !errors.Is(err, policy.ErrScope) {
			t.Errorf("got %v, want ErrScope", err)
		}
	})
}

// TestPageBoundsOnePlace (issue 34 item 11): every paged read of storage
// — a list, a subaccount's granted devices, usage — takes page and
// per_page within the one bound it owns (storage.MaxPage,
// storage.MaxPerPage; the api parses them within it and the OpenAPI
// document declares it) and refuses anything beyond with
// ErrBadListRequest, so that no read takes a page the API would refuse.
func TestPageBoundsOnePlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	acme := principalOf(t, f.s, "acme")
	manage, err := f.e.ManagementScope(ctx, policy.NewInput(acme, "", "", demoToday))
	if err != nil {
		t.Fatal(err)
	}
	night := principalOf(t, f.s, "acme-night").Account.ID
	services := f.scope(t, "acme", "services")
	reads := map[string]func(page, perPage int) error{
		"List": func(page, perPage int) error {
			_, err := storage.List(ctx, f.s, services, storage.Services, storage.ListRequest{Page: page, PerPage: perPage})
			return err
		},
		"GrantedObjects": func(page, perPage int) error {
			_, err := f.s.GrantedObjects(ctx, manage, night, storage.ListRequest{Page: page, PerPage: perPage})
			return err
		},
		"UsageTotals": func(page, perPage int) error {
			_, err := f.s.UsageTotals(ctx, manage, storage.UsageRequest{From: storage.NewDate(demoToday), To: storage.NewDate(demoToday), Page: page, PerPage: perPage})
			return err
		},
	}
	for name, read := range reads {
		for _, c := range []struct{ page, perPage int }{{1, 1}, {1, storage.MaxPerPage}, {storage.MaxPage, storage.MaxPerPage}, {1, storage.DefaultPerPage}} {
			if err := read(c.page, c.perPage); err != nil {
				t.Errorf("%s page %d per_page %d: %v, want a page", name, c.page, c.perPage, err)
			}
		}
		for _, c := range []struct{ page, perPage int }{{1, storage.MaxPerPage + 1}, {1, 0}, {1, -1}, {0, 1}, {storage.MaxPage + 1, 1}, {1, 10_000}} {
			if err := read(c.page, c.perPage); !errors.Is(err, storage.ErrBadListRequest) {
				t.Errorf("%s page %d per_page %d: %v, want ErrBadListRequest", name, c.page, c.perPage, err)
			}
		}
	}
}
