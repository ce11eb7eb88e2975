package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// TestDiffScopesFailsClosed: DiffScopes compares only scopes of one
// resource that storage translates itself (two resources, or the zero
// Scope that no engine made, is policy.ErrScope: no statement), and two
// equal scopes differ in no row, whichever engine answered them (an
// engine wired without storage's schema too: storage translates every
// scope it queries with).
func TestDiffScopesFailsClosed(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	e := newEngine(t)
	bare, err := policy.New(ctx, policy.Options{Schema: policy.ResourceList(storage.Resources()), CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	in := policy.Input{Account: policy.AccountInput{ID: 7, Type: "user", ManagerID: 3, Active: true, Privileges: []string{}, Chain: []policy.AncestorInput{}, ChainComplete: true}}
	services, err := e.Scope(ctx, in, "services")
	if err != nil {
		t.Fatal(err)
	}
	reports, err := e.Scope(ctx, in, "reports")
	if err != nil {
		t.Fatal(err)
	}
	unchecked, err := bare.Scope(ctx, in, "services")
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]policy.Scope{{services, reports}, {services, {}}, {{}, services}} {
		if _, _, err := s.DiffScopes(ctx, pair[0], pair[1]); !errors.Is(err, policy.ErrScope) {
			t.Fatalf("want policy.ErrScope, got %v", err)
		}
	}
	for _, pair := range [][2]policy.Scope{{services, services}, {services, unchecked}, {unchecked, services}} {
		added, removed, err := s.DiffScopes(ctx, pair[0], pair[1])
		if err != nil || added.Count != 0 || removed.Count != 0 || added.Examples == nil {
			t.Fatalf("equal scopes: %+v %+v %v", added, removed, err)
		}
	}
}
