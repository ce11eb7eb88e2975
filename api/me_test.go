package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

func TestMe(t *testing.T) {
	a := newTestAPI(t)
	tests := []struct {
		name, token, username, typ string
		readOnly                   bool
		routes                     map[string]bool
	}{
		{"admin", "admin-all", "admin", "admin", false, map[string]bool{"GET /services": true, "GET /reports": true, "POST /passengers": true}},
		{"manager", "fleetco-all", "fleetco", "manager", false, map[string]bool{"GET /events": true}},
		{"user", "acme-all", "acme", "user", false, map[string]bool{"GET /events/{id}": true, "POST /passengers": true}},
		{"user narrow token", "acme-services-only", "acme", "user", false, map[string]bool{"GET /me": true, "GET /services": true, "GET /reports": false, "POST /passengers": false}},
		{"read-only user", "umbrella-all", "umbrella", "user", true, map[string]bool{"GET /services": true, "POST /passengers": false}},
		{"subaccount", "acme-night-all", "acme-night", "subaccount", false, map[string]bool{"GET /reports": true, "GET /events": false, "GET /events/{id}": false}},
		{"other tenant manager", "northwind-all", "northwind", "manager", false, map[string]bool{"GET /services": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := a.get("/api/v2/me", demoToken(t, tt.token))
			if res.status != http.StatusOK {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
			for _, h := range []string{"X-Powered-By", "Server-Timing", "Trailer"} {
				if v := res.header.Get(h); v != "" {
					t.Errorf("framework header %s: %q", h, v)
				}
			}
			d := res.data(t)
			if d["username"] != tt.username || d["type"] != tt.typ {
				t.Errorf("username %v type %v, want %s %s", d["username"], d["type"], tt.username, tt.typ)
			}
			if d["active"] != "true" || d["account_expire"] != "false" {
				t.Errorf("active %v account_expire %v", d["active"], d["account_expire"])
			}
			if id, _ := d["id"].(float64); id < 1 {
				t.Errorf("id %v", d["id"])
			}
			perms, _ := d["permissions"].(map[string]any)
			if perms["read_only"] != tt.readOnly {
				t.Errorf("read_only %v, want %v", perms["read_only"], tt.readOnly)
			}
			routes, _ := perms["routes"].(map[string]any)
			for r, want := range tt.routes {
				if routes[r] != want {
					t.Errorf("routes[%q] = %v, want %v (%v)", r, routes[r], want, routes)
				}
			}
			if _, ok := perms["token"].([]any); !ok {
				t.Errorf("permissions.token missing: %v", perms)
			}
		})
	}
	t.Run("subaccount privileges and parent", func(t *testing.T) {
		d := a.get("/api/v2/me", demoToken(t, "acme-night-all")).data(t)
		privs := d["permissions"].(map[string]any)["privileges"].([]any)
		if len(privs) != 1 || privs[0] != "reports" {
			t.Errorf("privileges %v, want [reports]", privs)
		}
		acme := a.get("/api/v2/me", demoToken(t, "acme-all")).data(t)
		if d["manager_id"] != acme["id"] {
			t.Errorf("subaccount manager_id %v, want acme's id %v", d["manager_id"], acme["id"])
		}
	})
}

func TestMeAuthorizationForms(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	for _, h := range []string{"Bearer " + tok, tok, "bearer " + tok, "  Bearer   " + tok + " "} {
		res := a.do(http.MethodGet, "/api/v2/me", nil, "Authorization", h)
		if res.status != http.StatusOK {
			t.Errorf("Authorization %q: status %d %s", h, res.status, res.raw)
		}
	}
}

func TestMe401(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	secret, tok, err := a.store.CreateToken(ctx, storage.NewToken{Username: "acme", Name: "to-revoke", Permissions: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.store.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	valid := demoToken(t, "acme-all")
	tests := []struct {
		name    string
		headers []string
		code    string
	}{
		{"missing", nil, "AUTH_REQUIRED"},
		{"empty", []string{"Authorization", ""}, "AUTH_REQUIRED"},
		{"malformed", []string{"Authorization", "Bearer not-a-token"}, "INVALID_TOKEN"},
		{"other scheme", []string{"Authorization", "Basic " + valid}, "INVALID_TOKEN"},
		{"truncated", []string{"Authorization", "Bearer " + valid[:len(valid)-1]}, "INVALID_TOKEN"},
		{"unknown", []string{"Authorization", "Bearer flt_" + strings.Repeat("Z", 32)}, "INVALID_TOKEN"},
		{"two headers", []string{"Authorization", valid, "Authorization", valid}, "INVALID_TOKEN"},
		{"revoked", []string{"Authorization", "Bearer " + secret}, "INVALID_TOKEN"},
		{"expired token", []string{"Authorization", "Bearer " + demoToken(t, "acme-expired")}, "TOKEN_EXPIRED"},
		{"inactive account", []string{"Authorization", "Bearer " + demoToken(t, "hooli-all")}, "ACCOUNT_INACTIVE"},
		{"expired account", []string{"Authorization", "Bearer " + demoToken(t, "soylent-all")}, "ACCOUNT_EXPIRED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := a.do(http.MethodGet, "/api/v2/me", nil, tt.headers...)
			if res.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", res.status, res.raw)
			}
			if got := res.errorCode(t); got != tt.code {
				t.Fatalf("code %s, want %s", got, tt.code)
			}
			if !strings.HasPrefix(res.header.Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("WWW-Authenticate %q", res.header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestMeTouchesLastUsed(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	a.get("/api/v2/me", demoToken(t, "globex-read")).data(t)
	toks, err := a.store.ListTokens(ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if tok.Name == "globex-read" {
			if tok.LastUsedAt == nil || tok.LastUsedAt.Before(before) {
				t.Fatalf("last_used_at %v, want after %v", tok.LastUsedAt, before)
			}
			return
		}
	}
	t.Fatal("token globex-read not listed")
}

func TestRequestIDHeader(t *testing.T) {
	a := newTestAPI(t)
	res := a.do(http.MethodGet, "/api/v2/me", nil, "X-Request-Id", "client-123", "Authorization", demoToken(t, "acme-all"))
	if got := res.header.Get("X-Request-Id"); got != "client-123" {
		t.Fatalf("X-Request-Id %q, want the client's", got)
	}
	res.data(t)
	res = a.do(http.MethodGet, "/api/v2/me", nil, "X-Request-Id", "bad id with spaces")
	if got := res.header.Get("X-Request-Id"); got == "bad id with spaces" || len(got) != 32 {
		t.Fatalf("X-Request-Id %q, want a fresh one", got)
	}
	res.errorCode(t)
}
