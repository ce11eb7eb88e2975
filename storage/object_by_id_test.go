package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// TestObjectByID: one device in the objects scope of each account type
// (a subaccount: the devices granted to it), ErrNotFound outside it and for
// an id that does not exist, ErrScope for a scope of another resource.
func TestObjectByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newListFixture(t)
	ids := map[string]int64{}
	var objects []storage.Object
	if err := f.db.NewSelect().Model(&objects).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		ids[o.Name] = o.ID
	}
	tests := []struct {
		username, device string
		found            bool
	}{
		{"admin", "Crane 5", true},
		{"fleetco", "Reefer 21", true},
		{"fleetco", "Bus 101", false},
		{"northwind", "Crane 5", true},
		{"acme", "Van 12", true},
		{"acme", "Reefer 21", false},
		{"acme-night", "Truck 7", true}, // granted
		{"acme-night", "Van 12", false}, // not granted
		{"hooli", "Truck 7", false},
	}
	for _, tc := range tests {
		t.Run(tc.username+"/"+tc.device, func(t *testing.T) {
			o, err := f.s.ObjectByID(ctx, f.scope(t, tc.username, "objects"), ids[tc.device])
			switch {
			case tc.found && (err != nil || o.Name != tc.device || o.ID != ids[tc.device]):
				t.Errorf("got %q, %v", o.Name, err)
			case tc.found && (o.LastTime != nil || o.Attributes != nil):
				t.Errorf("never reported: last_time %v, attributes %v; want nil", o.LastTime, o.Attributes)
			case !tc.found && !errors.Is(err, storage.ErrNotFound):
				t.Errorf("got %q, %v; want ErrNotFound", o.Name, err)
			}
		})
	}
	t.Run("no such device", func(t *testing.T) {
		if _, err := f.s.ObjectByID(ctx, f.scope(t, "admin", "objects"), 999999); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
	t.Run("scope of another resource", func(t *testing.T) {
		if _, err := f.s.ObjectByID(ctx, f.scope(t, "admin", "events"), ids["Truck 7"]); !errors.Is(err, policy.ErrScope) {
			t.Errorf("got %v, want ErrScope", err)
		}
	})
}
