package storage_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
)

// dueWant is what the demo data's due services look like on demoToday.
type dueWant struct {
	state           string
	due             []string
	odo, engh, days *int64
}

func i64(n int64) *int64 { return &n }

// demoDue are the due services of the demo data on 2026-01-15, by name and
// object; the others (Air filter, Hydraulic service, globex's Oil change,
// tailspin's Oil change) are not due.
var demoDue = map[string]dueWant{
	"Oil change/Truck 7":             {"expired", []string{"odo"}, i64(-345), nil, nil},
	"Tire rotation/Truck 7":          {"soon", []string{"odo"}, i64(4655), nil, nil},
	"Annual inspection/Truck 7":      {"expired", []string{"days"}, nil, nil, i64(365 - 685)},
	"Brake check/Van 12":             {"soon", []string{"engh"}, nil, i64(90), nil},
	"Safety check/Forklift 3":        {"expired", []string{"days"}, nil, nil, i64(180 - 579)},
	"Refrigeration unit/Reefer 21":   {"soon", []string{"engh"}, nil, i64(120), nil},
	"Oil change/Shuttle 1":           {"soon", []string{"odo"}, i64(2500), nil, nil},
	"Transmission service/Bus 101":   {"expired", []string{"odo"}, i64(-2000), nil, nil},
	"Tachograph calibration/Bus 102": {"expired", []string{"days"}, nil, nil, i64(730 - 867)},
	"Boom inspection/Crane 5":        {"soon", []string{"engh"}, nil, i64(50), nil},
}

func TestDueServicesPerAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	tests := []struct {
		username string
		want     []string
	}{
		{"admin", []string{"Oil change/Truck 7", "Tire rotation/Truck 7", "Annual inspection/Truck 7", "Brake check/Van 12",
			"Safety check/Forklift 3", "Refrigeration unit/Reefer 21", "Oil change/Shuttle 1", "Transmission service/Bus 101",
			"Tachograph calibration/Bus 102", "Boom inspection/Crane 5"}},
		{"fleetco", []string{"Oil change/Truck 7", "Tire rotation/Truck 7", "Annual inspection/Truck 7", "Brake check/Van 12",
			"Safety check/Forklift 3", "Refrigeration unit/Reefer 21", "Oil change/Shuttle 1"}},
		{"northwind", []string{"Transmission service/Bus 101", "Tachograph calibration/Bus 102", "Boom inspection/Crane 5"}},
		{"acme", []string{"Oil change/Truck 7", "Tire rotation/Truck 7", "Annual inspection/Truck 7", "Brake check/Van 12", "Safety check/Forklift 3"}},
		{"tailspin", []string{"Transmission service/Bus 101", "Tachograph calibration/Bus 102"}},
		{"acme-night", []string{"Oil change/Truck 7", "Tire rotation/Truck 7", "Annual inspection/Truck 7"}},
		{"hooli", nil},   // inactive: sees nothing
		{"soylent", nil}, // expired: sees nothing
	}
	for _, tc := range tests {
		t.Run(tc.username, func(t *testing.T) {
			got, err := s.DueServices(ctx, scopeOf(t, e, s, tc.username, "services"), demoToday, 500)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for i, d := range got {
				key := d.Name + "/" + d.ObjectName
				names = append(names, key)
				if i > 0 && got[i-1].ServiceID <= d.ServiceID {
					t.Errorf("not newest first: %d before %d", got[i-1].ServiceID, d.ServiceID)
				}
				w, ok := demoDue[key]
				if !ok {
					t.Errorf("%s is listed but not due", key)
					continue
				}
				if d.State != w.state || !slices.Equal(d.Due, w.due) || !eqPtr(d.OdoRemaining, w.odo) ||
					!eqPtr(d.EnghRemaining, w.engh) || !eqPtr(d.DaysRemaining, w.days) {
					t.Errorf("%s: got state %s due %v remaining %v/%v/%v, want %+v", key, d.State, d.Due,
						show(d.OdoRemaining), show(d.EnghRemaining), show(d.DaysRemaining), w)
				}
			}
			slices.Sort(names)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("got %v\nwant %v", names, want)
			}
		})
	}
}

func TestDueServicesLimitAndCriteria(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	admin := scopeOf(t, e, s, "admin", "services")

	all, err := s.DueServices(ctx, admin, demoToday, 500)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("limit keeps the newest", func(t *testing.T) {
		got, err := s.DueServices(ctx, admin, demoToday, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].ServiceID != all[0].ServiceID || got[2].ServiceID != all[2].ServiceID {
			t.Fatalf("got %d records starting %v, want the first 3 of %d", len(got), ids(got), len(all))
		}
	})
	t.Run("several criteria", func(t *testing.T) {
		// Truck 7 (odometer 120345, engine hours 3400): odo run out, engh
		// within its threshold, days off (no days_last).
		if _, err := db.ExecContext(ctx, `INSERT INTO services (account_id, imei, name, odo, odo_interval, odo_last,
			engh, engh_interval, engh_last, engh_left, engh_left_num, days, days_interval)
			SELECT account_id, imei, 'Combined', true, 100, 120000, true, 500, 3000, true, 100, true, 10
			FROM objects WHERE imei = '356938035643809'`); err != nil {
			t.Fatal(err)
		}
		got, err := s.DueServices(ctx, admin, demoToday, 1)
		if err != nil {
			t.Fatal(err)
		}
		d := got[0]
		if d.Name != "Combined" || d.State != "expired" || !slices.Equal(d.Due, []string{"odo", "engh"}) ||
			!eqPtr(d.OdoRemaining, i64(-245)) || !eqPtr(d.EnghRemaining, i64(100)) || d.DaysRemaining != nil {
			t.Fatalf("got %+v due %v remaining %v/%v/%v", d.Service, d.Due, show(d.OdoRemaining), show(d.EnghRemaining), show(d.DaysRemaining))
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, err := s.DueServices(ctx, scopeOf(t, e, s, "admin", "reports"), demoToday, 10); !errors.Is(err, policy.ErrScope) {
			t.Errorf("reports scope: %v, want ErrScope", err)
		}
		if _, err := s.DueServices(ctx, admin, demoToday, 0); !errors.Is(err, storage.ErrBadListRequest) {
			t.Errorf("limit 0: %v, want ErrBadListRequest", err)
		}
	})
}

func eqPtr(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func show(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func ids(ds []storage.DueService) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.ServiceID
	}
	return out
}
