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

// TestGrantsStorage: the storage half of the grant routes, below the
// policy. ParentDevices answers only the parent's devices (unknown and
// foreign alike absent); ReplaceGrants refuses any other device inside its
// transaction (ErrDeviceNotOwned) and an account outside the scope
// (ErrNotFound), storing neither grants nor an audit row; GrantedObjects
// and CreateObject keep to the scope too.
func TestGrantsStorage(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	acme := principalOf(t, s, "acme")
	scope, err := e.ManagementScope(ctx, policy.NewInput(acme, "", "", demoToday))
	if err != nil {
		t.Fatal(err)
	}
	night := principalOf(t, s, "acme-night").Account.ID
	day := principalOf(t, s, "globex-day").Account.ID
	actor := storage.Actor{AccountID: acme.Account.ID, TokenID: 3, RequestID: "req-grants"}
	grants := func() []string {
		out := []string{}
		if err := db.NewRaw("SELECT imei FROM object_grants WHERE subaccount_id = ? ORDER BY imei", night).Scan(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	initial := grants()

	owned, err := s.ParentDevices(ctx, scope, night, []string{"356938035643825", "no-such", "861073032104551", "356938035643809"})
	if err != nil || !slices.Equal(owned, []string{"356938035643809", "356938035643825"}) {
		t.Fatalf("ParentDevices = %v, %v", owned, err)
	}
	if _, err := s.ParentDevices(ctx, scope, day, nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ParentDevices outside the scope: %v", err)
	}
	for name, c := range map[string]struct {
		id   int64
		imei []string
		want error
	}{
		"unknown device": {night, []string{"no-such"}, storage.ErrDeviceNotOwned},
		"foreign device": {night, []string{"356938035643817", "861073032104551"}, storage.ErrDeviceNotOwned},
		"outside scope":  {day, []string{"861073032104551"}, storage.ErrNotFound},
		"missing":        {987654, []string{}, storage.ErrNotFound},
	} {
		if _, err := s.ReplaceGrants(ctx, scope, actor, c.id, c.imei); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if got := grants(); !slices.Equal(got, initial) || count(t, db, "SELECT count(*) FROM audit_events") != 0 {
		t.Fatalf("refused replaces left grants %v (want %v) and %d audit rows", got, initial, count(t, db, "SELECT count(*) FROM audit_events"))
	}
	granted, err := s.ReplaceGrants(ctx, scope, actor, night, []string{"356938035643825", "356938035643817"})
	if err != nil || len(granted) != 2 || granted[0].ID > granted[1].ID || !slices.Equal(grants(), []string{"356938035643817", "356938035643825"}) {
		t.Fatalf("ReplaceGrants = %v, %v; stored %v", granted, err, grants())
	}
	req := storage.ListRequest{Page: 1, PerPage: 10}
	if page, err := s.GrantedObjects(ctx, scope, night, req); err != nil || page.Total != 2 {
		t.Fatalf("GrantedObjects = %v, %v", page, err)
	}
	if _, err := s.GrantedObjects(ctx, scope, day, req); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GrantedObjects outside the scope: %v", err)
	}
	globex := principalOf(t, s, "globex").Account.ID
	if _, _, err := s.CreateObject(ctx, scope, actor, storage.Object{IMEI: "x-1", AccountID: globex}, nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("CreateObject outside the scope: %v", err)
	}
	if _, _, err := s.CreateObject(ctx, scope, actor, storage.Object{IMEI: "861073032104551", AccountID: acme.Account.ID}, nil); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("CreateObject with a foreign imei: %v", err)
	}
	if n := count(t, db, "SELECT count(*) FROM audit_events"); n != 1 {
		t.Fatalf("%d audit rows, want 1 (the replace)", n)
	}
}
