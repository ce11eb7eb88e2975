package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// newEngine returns the real embedded policy with storage's scope check.
func newEngine(t testing.TB) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	return e
}

// demoToday is the fixed day of the demo-data tests.
var demoToday = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

// principalOf returns the principal of a stored account with an
// every-route token.
func principalOf(t testing.TB, s *storage.Store, username string) tenancy.Principal {
	t.Helper()
	a, err := s.AccountByUsername(context.Background(), username)
	if err != nil {
		t.Fatalf("account %s: %v", username, err)
	}
	return tenancy.Principal{Token: tenancy.Token{ID: 1, AccountID: a.ID, Permissions: []string{"*"}}, Account: a}
}

// scopeOf returns the policy's row scope of resource for the stored
// account username, on demoToday.
func scopeOf(t testing.TB, e *policy.Engine, s *storage.Store, username string, resource policy.Resource) policy.Scope {
	t.Helper()
	p := principalOf(t, s, username)
	in := policy.NewInput(p, "GET", "/"+string(resource), demoToday)
	rs, err := e.Scope(context.Background(), in, resource)
	if err != nil {
		t.Fatalf("scope of %s for %s: %v", resource, username, err)
	}
	return rs
}
