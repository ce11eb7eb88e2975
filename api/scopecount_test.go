package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestListTranslatesScopeOnce counts the translations of the scope into
// SQL (storage's own, kept by the Store: Store.ScopesTranslated) per list
// request, for every list route of the registry: one on the account's
// first request of a resource (a cache miss), none on the next, and none
// for another token of the same account (the scope is cached by the
// account's facts, not by the token or the route).
func TestListTranslatesScopeOnce(t *testing.T) {
	base := newTestAPI(t)
	engine, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(base.db.DB)
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store, Ready: store})
	if err != nil {
		t.Fatal(err)
	}
	var mark int64
	translated := func() int64 { return store.ScopesTranslated() - mark }
	a := &testAPI{t: t, handler: srv.Handler(), store: store, db: base.db}
	acme, acmeServices := demoToken(t, "acme-all"), demoToken(t, "acme-services-only")
	lists := 0
	for _, d := range storage.Descriptors() {
		if !d.Listed() {
			continue
		}
		lists++
		path := api.BasePath + "/" + string(d.Resource())
		for i, want := range []int64{1, 0, 0} {
			mark = store.ScopesTranslated()
			res := a.get(path+"?per_page=1", acme)
			if res.status != http.StatusOK {
				t.Fatalf("%s: status %d: %s", path, res.status, res.raw)
			}
			if got := translated(); got != want {
				t.Errorf("%s, request %d: %d scope translations, want %d", path, i+1, got, want)
			}
		}
		// Another token of the same account: the route may be denied to
		// it (403 before any scope), but an allowed one translates nothing.
		mark = store.ScopesTranslated()
		if res := a.get(path+"?per_page=1", acmeServices); res.status != http.StatusOK && res.status != http.StatusForbidden {
			t.Fatalf("%s with another token: status %d: %s", path, res.status, res.raw)
		}
		if got := translated(); got != 0 {
			t.Errorf("%s with another token of the account: %d scope translations, want 0", path, got)
		}
	}
	if lists == 0 {
		t.Fatal("no list route in the registry")
	}
}
