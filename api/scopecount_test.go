package api_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestListTranslatesScopeOnce counts the translations of the scope into
// SQL (storage.CompileScope, through the engine's hook) per list request,
// for every list route of the registry: one on the account's first request
// of a resource (a cache miss), none on the next, and none for another
// token of the same account (the scope is cached by the account's facts,
// not by the token or the route).
func TestListTranslatesScopeOnce(t *testing.T) {
	base := newTestAPI(t)
	var translations atomic.Int64
	engine, err := policy.New(context.Background(), policy.Options{
		Resources: storage.Resources(),
		CompileScope: func(s policy.Scope) (any, error) {
			translations.Add(1)
			return storage.CompileScope(s)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: base.store}, Policy: engine, Store: base.store, Ready: base.store})
	if err != nil {
		t.Fatal(err)
	}
	a := &testAPI{t: t, handler: srv.Handler(), store: base.store, db: base.db}
	acme, acmeServices := demoToken(t, "acme-all"), demoToken(t, "acme-services-only")
	lists := 0
	for _, d := range storage.Descriptors() {
		if !d.Listed() {
			continue
		}
		lists++
		path := api.BasePath + "/" + string(d.Resource())
		for i, want := range []int64{1, 0, 0} {
			translations.Store(0)
			res := a.get(path+"?per_page=1", acme)
			if res.status != http.StatusOK {
				t.Fatalf("%s: status %d: %s", path, res.status, res.raw)
			}
			if got := translations.Load(); got != want {
				t.Errorf("%s, request %d: %d scope translations, want %d", path, i+1, got, want)
			}
		}
		// Another token of the same account: the route may be denied to
		// it (403 before any scope), but an allowed one translates nothing.
		translations.Store(0)
		if res := a.get(path+"?per_page=1", acmeServices); res.status != http.StatusOK && res.status != http.StatusForbidden {
			t.Fatalf("%s with another token: status %d: %s", path, res.status, res.raw)
		}
		if got := translations.Load(); got != 0 {
			t.Errorf("%s with another token of the account: %d scope translations, want 0", path, got)
		}
	}
	if lists == 0 {
		t.Fatal("no list route in the registry")
	}
}
