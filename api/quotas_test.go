package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// newQuotaAPI is the test API whose store has the platform default quotas
// defaults (docs/design.md §12).
func newQuotaAPI(t *testing.T, defaults limits.Quotas) *testAPI {
	t.Helper()
	a := newTestAPI(t)
	store := storage.NewStore(a.db.DB).WithQuotas(defaults)
	engine, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store, Ready: store})
	if err != nil {
		t.Fatal(err)
	}
	a.handler, a.store, a.srv = srv.Handler(), store, srv
	return a
}

func quota(n int64) *int64 { return &n }

// TestQuotasConcurrentCreators: 16 concurrent creators of each counted kind
// never take an account past its quota, not even by one; every refused
// create is 403 QUOTA_EXCEEDED with details {quota, limit, used}.
func TestQuotasConcurrentCreators(t *testing.T) {
	a := newQuotaAPI(t, limits.Quotas{})
	admin, acmeTok := demoToken(t, "admin-all"), demoToken(t, "acme-all")
	acme := a.accountID(t, "acme")
	for _, tt := range []struct {
		quota  string
		token  string
		used   string // counts what the quota counts
		create func(i int) (string, string)
	}{
		{"devices", admin, "SELECT count(*) FROM objects WHERE account_id = ?", func(i int) (string, string) {
			return "/api/v2/objects", fmt.Sprintf(`{"imei":"Q%014d","name":"q%d","account_id":%d,"odometer":0,"engine_hours":0}`, i, i, acme)
		}},
		{"tokens", acmeTok, "SELECT count(*) FROM tokens WHERE account_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())", func(i int) (string, string) {
			return "/api/v2/tokens", fmt.Sprintf(`{"account_id":%d,"name":"q%d","permissions":["GET *"]}`, acme, i)
		}},
		{"passengers", acmeTok, "SELECT count(*) FROM passengers WHERE account_id = ?", func(i int) (string, string) {
			return "/api/v2/passengers", fmt.Sprintf(`{"passenger_name":"Quota %d"}`, i)
		}},
		{"subaccounts", acmeTok, "SELECT count(*) FROM accounts WHERE manager_id = ?", func(i int) (string, string) {
			return "/api/v2/accounts", fmt.Sprintf(`{"username":"acme-q%d","type":"subaccount","manager_id":%d}`, i, acme)
		}},
	} {
		t.Run(tt.quota, func(t *testing.T) {
			before := int64(a.count(t, tt.used, acme))
			limit := before + 5
			res := a.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", acme), admin, fmt.Sprintf(`{"quotas":{%q:%d}}`, tt.quota, limit))
			if res.status != http.StatusOK {
				t.Fatalf("PATCH quotas: %d %s", res.status, res.raw)
			}
			const creators = 16
			results := make([]response, creators)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range creators {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					path, body := tt.create(i)
					results[i] = a.send(http.MethodPost, path, tt.token, body)
				}()
			}
			close(start)
			wg.Wait()
			created := int64(0)
			for _, r := range results {
				switch r.status {
				case http.StatusCreated:
					created++
				case http.StatusForbidden:
					if code := r.errorCode(t); code != "QUOTA_EXCEEDED" {
						t.Fatalf("403 %s: %s", code, r.raw)
					}
					d := r.body["error"].(map[string]any)["details"].(map[string]any)
					if d["quota"] != tt.quota || d["limit"] != float64(limit) || d["used"] != float64(limit) {
						t.Fatalf("details %v, want quota %s limit %d used %d", d, tt.quota, limit, limit)
					}
				default:
					t.Fatalf("create: %d %s", r.status, r.raw)
				}
			}
			if got := int64(a.count(t, tt.used, acme)); created != 5 || got != limit {
				t.Fatalf("%d created, %d counted; want 5 created and %d counted (the quota)", created, got, limit)
			}
			// GET /accounts/{id} shows the limit and the use.
			acc := a.get(fmt.Sprintf("/api/v2/accounts/%d", acme), admin).data(t)
			if q := acc["quotas"].(map[string]any)[tt.quota]; q != float64(limit) {
				t.Fatalf("quotas.%s = %v, want %d", tt.quota, q, limit)
			}
			if u := acc["usage"].(map[string]any)[tt.quota]; u != float64(limit) {
				t.Fatalf("usage.%s = %v, want %d", tt.quota, u, limit)
			}
		})
	}
}

// TestQuotas: platform defaults, overrides and their reset, what is
// counted (active tokens only, a device moved in), who may set quotas
// (never oneself, never above one's own, an admin any) and bad bodies.
func TestQuotas(t *testing.T) {
	a := newQuotaAPI(t, limits.Quotas{Tokens: quota(3), Devices: quota(4)})
	admin, fleetco, acmeTok := demoToken(t, "admin-all"), demoToken(t, "fleetco-all"), demoToken(t, "acme-all")
	acme, globex, fleetcoID := a.accountID(t, "acme"), a.accountID(t, "globex"), a.accountID(t, "fleetco")
	accountPath := func(id int64) string { return fmt.Sprintf("/api/v2/accounts/%d", id) }
	patch := func(t *testing.T, token string, id int64, body string) response {
		t.Helper()
		return a.send(http.MethodPatch, accountPath(id), token, body)
	}
	reason := func(t *testing.T, r response) string {
		t.Helper()
		if r.status != http.StatusForbidden || r.errorCode(t) != "MANAGEMENT_DENIED" {
			t.Fatalf("want 403 MANAGEMENT_DENIED, got %d %s", r.status, r.raw)
		}
		return r.body["error"].(map[string]any)["details"].(map[string]any)["reason"].(string)
	}

	t.Run("defaults shown and enforced", func(t *testing.T) {
		acc := a.get(accountPath(acme), acmeTok).data(t)
		q, u := acc["quotas"].(map[string]any), acc["usage"].(map[string]any)
		if q["tokens"] != float64(3) || q["devices"] != float64(4) || q["subaccounts"] != nil || q["passengers"] != nil {
			t.Fatalf("quotas %v", q)
		}
		if u["devices"] != float64(a.count(t, "SELECT count(*) FROM objects WHERE account_id = ?", acme)) {
			t.Fatalf("usage %v", u)
		}
		// The list does not carry them.
		items, _ := a.list(t, "/api/v2/accounts?per_page=500", admin)
		for _, it := range items {
			if _, ok := it["quotas"]; ok {
				t.Fatalf("a listed account shows quotas: %v", it)
			}
		}
		// The admin has none.
		if q := a.get(accountPath(a.accountID(t, "admin")), admin).data(t)["quotas"].(map[string]any); q["tokens"] != nil {
			t.Fatalf("admin quotas %v", q)
		}
	})

	t.Run("active tokens only", func(t *testing.T) {
		n := int64(a.count(t, "SELECT count(*) FROM tokens WHERE account_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())", globex))
		if n > 3 {
			t.Fatalf("globex has %d active tokens", n)
		}
		var ids []float64
		for i := int64(0); i < 3-n; i++ {
			r := a.send(http.MethodPost, "/api/v2/tokens", fleetco, fmt.Sprintf(`{"account_id":%d,"name":"t%d","permissions":["GET *"]}`, globex, i))
			if r.status != http.StatusCreated {
				t.Fatalf("token %d: %d %s", i, r.status, r.raw)
			}
			ids = append(ids, r.data(t)["id"].(float64))
		}
		over := `{"account_id":` + fmt.Sprint(globex) + `,"name":"over","permissions":["GET *"]}`
		if r := a.send(http.MethodPost, "/api/v2/tokens", fleetco, over); r.status != http.StatusForbidden || r.errorCode(t) != "QUOTA_EXCEEDED" {
			t.Fatalf("over the default: %d %s", r.status, r.raw)
		}
		// A revoked token no longer counts.
		if r := a.do(http.MethodDelete, fmt.Sprintf("/api/v2/tokens/%.0f", ids[len(ids)-1]), nil, "Authorization", "Bearer "+fleetco); r.status != http.StatusNoContent {
			t.Fatalf("revoke: %d %s", r.status, r.raw)
		}
		if r := a.send(http.MethodPost, "/api/v2/tokens", fleetco, over); r.status != http.StatusCreated {
			t.Fatalf("after a revocation: %d %s", r.status, r.raw)
		}
	})

	t.Run("a device moved in counts", func(t *testing.T) {
		// globex gets room for exactly its devices, then one is moved in.
		n := a.count(t, "SELECT count(*) FROM objects WHERE account_id = ?", globex)
		if r := patch(t, admin, globex, fmt.Sprintf(`{"quotas":{"devices":%d}}`, n)); r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		var dev int64
		if err := a.db.NewRaw("SELECT id FROM objects WHERE account_id = ? ORDER BY id LIMIT 1", acme).Scan(context.Background(), &dev); err != nil {
			t.Fatal(err)
		}
		r := a.send(http.MethodPatch, fmt.Sprintf("/api/v2/objects/%d", dev), fleetco, fmt.Sprintf(`{"account_id":%d}`, globex))
		if r.status != http.StatusForbidden || r.errorCode(t) != "QUOTA_EXCEEDED" {
			t.Fatalf("move over the quota: %d %s", r.status, r.raw)
		}
		if got := a.count(t, "SELECT count(*) FROM objects WHERE account_id = ?", globex); got != n {
			t.Fatalf("globex has %d devices, want %d", got, n)
		}
	})

	t.Run("override, reset and audit", func(t *testing.T) {
		r := patch(t, fleetco, acme, `{"quotas":{"tokens":2,"subaccounts":0}}`)
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		q := r.data(t)["quotas"].(map[string]any)
		if q["tokens"] != float64(2) || q["subaccounts"] != float64(0) || q["devices"] != float64(4) {
			t.Fatalf("quotas %v", q)
		}
		sub := fmt.Sprintf(`{"username":"acme-zero","type":"subaccount","manager_id":%d}`, acme)
		if r := a.send(http.MethodPost, "/api/v2/accounts", acmeTok, sub); r.status != http.StatusForbidden || r.errorCode(t) != "QUOTA_EXCEEDED" {
			t.Fatalf("subaccount over a quota of 0: %d %s", r.status, r.raw)
		}
		var changes string
		if err := a.db.NewRaw("SELECT changes::text FROM audit_events WHERE action = 'account.update' AND target_account_id = ? ORDER BY id DESC LIMIT 1", acme).
			Scan(context.Background(), &changes); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(changes, `"quotas"`) || !strings.Contains(changes, `"tokens": 2`) {
			t.Fatalf("audit changes %s", changes)
		}
		// null returns a quota to the platform default.
		r = patch(t, fleetco, acme, `{"quotas":{"tokens":null,"subaccounts":null}}`)
		if q := r.data(t)["quotas"].(map[string]any); q["tokens"] != float64(3) || q["subaccounts"] != nil {
			t.Fatalf("after the reset: %v", q)
		}
		if r := a.send(http.MethodPost, "/api/v2/accounts", acmeTok, sub); r.status != http.StatusCreated {
			t.Fatalf("subaccount after the reset: %d %s", r.status, r.raw)
		}
	})

	t.Run("who may set quotas", func(t *testing.T) {
		// Never one's own, whoever asks.
		for _, tok := range []string{acmeTok, fleetco, admin} {
			self := a.get("/api/v2/me", tok).data(t)["id"]
			id, _ := self.(float64)
			if id == 0 {
				id = float64(a.accountID(t, a.get("/api/v2/me", tok).data(t)["username"].(string)))
			}
			if got := reason(t, patch(t, tok, int64(id), `{"quotas":{"devices":1}}`)); got != "own_account" {
				t.Fatalf("own quotas: %s", got)
			}
		}
		// A manager limited to 10 devices gives no more than 10; unlimited is more than any number.
		if r := patch(t, admin, fleetcoID, `{"quotas":{"devices":10}}`); r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		if r := patch(t, fleetco, acme, `{"quotas":{"devices":10}}`); r.status != http.StatusOK {
			t.Fatalf("up to its own: %d %s", r.status, r.raw)
		}
		r := patch(t, fleetco, acme, `{"quotas":{"devices":11}}`)
		if got := reason(t, r); got != "exceeds_own_quota" {
			t.Fatalf("above its own: %s", got)
		}
		if d := r.body["error"].(map[string]any)["details"].(map[string]any); d["quota"] != "devices" || d["limit"] != float64(10) {
			t.Fatalf("details %v", d)
		}
		// The platform default of passengers is unlimited: the manager's is too, so any number.
		if r := patch(t, fleetco, acme, `{"quotas":{"passengers":5000000}}`); r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		// A user sets its subaccount's token quota within its own.
		night := a.accountID(t, "acme-night")
		if got := reason(t, patch(t, acmeTok, night, `{"quotas":{"tokens":4}}`)); got != "exceeds_own_quota" {
			t.Fatalf("user above its own: %s", got)
		}
		if r := patch(t, acmeTok, night, `{"quotas":{"tokens":1}}`); r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		// An admin sets any.
		if r := patch(t, admin, acme, `{"quotas":{"devices":1000000}}`); r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		// Nothing was written by the refusals: acme's devices quota is the admin's.
		if q := a.get(accountPath(acme), admin).data(t)["quotas"].(map[string]any); q["devices"] != float64(1000000) {
			t.Fatalf("quotas %v", q)
		}
	})

	t.Run("bad bodies", func(t *testing.T) {
		for body, code := range map[string]string{
			`{"quotas":{"devices":-1}}`:         "VALIDATION_FAILED",
			`{"quotas":{"devices":1000000001}}`: "VALIDATION_FAILED",
			`{"quotas":{}}`:                     "VALIDATION_FAILED",
			`{"quotas":null}`:                   "VALIDATION_FAILED",
			`{"quotas":{"drivers":1}}`:          "INVALID_BODY",
			`{"quotas":{"devices":"5"}}`:        "INVALID_BODY",
			`{"quotas":{"devices":1.5}}`:        "INVALID_BODY",
			`{"quotas":[1]}`:                    "INVALID_BODY",
		} {
			r := a.do(http.MethodPatch, accountPath(acme), bytes.NewReader([]byte(body)), "Authorization", "Bearer "+fleetco, "Content-Type", "application/json")
			if r.status != http.StatusBadRequest || r.errorCode(t) != code {
				t.Fatalf("%s: %d %s, want 400 %s", body, r.status, r.raw, code)
			}
		}
	})
}
