package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/fleetapi/fleetapi/api"
)

// TestLimitsStayInsideTenant (issue 34 item 2; docs/decisions.md, "A
// limit never lets one tenant's traffic spend another tenant's budget"):
// the chain operator (admin) → reseller (manager fleetco) → customers
// (users acme, globex) → integrations (acme's own child token and a token
// of its subaccount acme-night), each token minted by the one above it
// through POST /tokens, each with a budget of 10. A customer's integrations
// flooding the API are served what the customer's own token allows, no
// more (minting children multiplies nothing), and the operator's, the
// reseller's and the sibling customer's budgets are not spent at all
// (RateLimit-Remaining counts exactly their own requests); a reseller
// flooding the API spends neither the operator's budget nor its
// customers'.
func TestLimitsStayInsideTenant(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.Limiter = stoppedLimiter() })
	const limit = 10
	mintFor := func(caller, account, name string) string {
		t.Helper()
		return a.mint(t, caller, map[string]any{"name": name, "permissions": []string{"*"}, "rate_limit": limit,
			"account_id": a.accountID(t, account)}).secret
	}
	operator := a.mintToken(t, "admin", "operator", []string{"*"}, nil, limit)
	reseller := mintFor(operator, "fleetco", "reseller")    // operator: 1 spent
	acme := mintFor(reseller, "acme", "acme-first")         // reseller: 1
	globex := mintFor(reseller, "globex", "globex-first")   // reseller: 2
	child := mintFor(acme, "acme", "acme-child")            // acme: 1
	night := mintFor(acme, "acme-night", "acme-night-sync") // acme: 2
	day := mintFor(globex, "globex-day", "globex-day-sync") // globex: 1
	nightChild := mintFor(night, "acme-night", "acme-night-child")

	// The flood: acme's integrations, 30 requests each. Every token of
	// acme's tenant spends acme's first token's budget (8 left after its
	// two mints; the night token's mint spent 1 more): 7 served in all.
	served := 0
	for i := range 90 {
		tok := []string{child, night, nightChild}[i%3]
		r := a.get("/api/v2/me", tok)
		if r.status == http.StatusOK {
			served++
			continue
		}
		if s := scopeOf(t, r); s != "token" {
			t.Fatalf("a refusal of acme's flood names %q, want token", s)
		}
	}
	if served != limit-3 {
		t.Fatalf("acme's integrations were served %d requests, want %d: minting children multiplied the customer's budget or left it", served, limit-3)
	}
	if r := a.get("/api/v2/me", acme); r.status != http.StatusTooManyRequests {
		t.Fatalf("acme's own token after its tenant's flood: %d, want 429", r.status)
	}

	// Nobody outside acme's tenant paid for it: each budget shows exactly
	// its own requests.
	remaining := func(who, token string, want int) {
		t.Helper()
		r := a.get("/api/v2/me", token)
		if r.status != http.StatusOK || r.header.Get("RateLimit-Remaining") != fmt.Sprint(want) {
			t.Fatalf("%s: %d, RateLimit-Remaining %q, want 200 and %d (%s)",
				who, r.status, r.header.Get("RateLimit-Remaining"), want, r.raw)
		}
	}
	remaining("the operator after acme's flood", operator, limit-1-1)
	remaining("the reseller after acme's flood", reseller, limit-2-1)
	remaining("the sibling customer after acme's flood", globex, limit-1-1)
	remaining("the sibling's integration", day, limit-1-2) // globex's budget: its mint, its GET, this one

	// The reseller floods: its customers and the operator keep theirs.
	for range 2 * limit {
		a.get("/api/v2/me", reseller)
	}
	if r := a.get("/api/v2/me", reseller); r.status != http.StatusTooManyRequests || scopeOf(t, r) != "token" {
		t.Fatalf("the reseller after its flood: %d", r.status)
	}
	remaining("the operator after the reseller's flood", operator, limit-1-2)
	remaining("a customer after the reseller's flood", globex, limit-1-3) // its mint, its GET, its integration's, this one
}

// TestQuotasStayInsideTenant (issue 34 item 2, quotas): a quota counts
// the rows one account owns (a subaccount's passengers its parent
// user's), so what a customer's tenant creates — a subaccount, tokens for
// the customer and for its subaccount, a device, passengers from the
// customer and from its subaccount — is counted against the customer and
// its subaccount only: every other account's usage, its reseller's and
// the operator's included, stays as it was.
func TestQuotasStayInsideTenant(t *testing.T) {
	a := newTestAPI(t)
	admin, acmeTok, nightTok := demoToken(t, "admin-all"), demoToken(t, "acme-all"), demoToken(t, "acme-night-all")
	acme, night := a.accountID(t, "acme"), a.accountID(t, "acme-night")
	usage := func() map[string]string {
		t.Helper()
		items, _ := a.list(t, "/api/v2/accounts?per_page=500", admin)
		out := map[string]string{}
		for _, it := range items {
			id := int64(it["id"].(float64))
			out[it["username"].(string)] = fmt.Sprint(a.get(fmt.Sprintf("/api/v2/accounts/%d", id), admin).data(t)["usage"])
		}
		return out
	}
	before := usage()
	for _, c := range []struct{ token, path, body string }{
		{acmeTok, "/api/v2/accounts", fmt.Sprintf(`{"username":"acme-extra","type":"subaccount","manager_id":%d}`, acme)},
		{acmeTok, "/api/v2/tokens", fmt.Sprintf(`{"name":"own","permissions":["GET *"],"account_id":%d}`, acme)},
		{acmeTok, "/api/v2/tokens", fmt.Sprintf(`{"name":"integration","permissions":["GET *"],"account_id":%d}`, night)},
		{nightTok, "/api/v2/tokens", `{"name":"night-own","permissions":["GET *"]}`},
		{acmeTok, "/api/v2/objects", fmt.Sprintf(`{"imei":"356938035649999","name":"Van 9","account_id":%d}`, acme)},
		{acmeTok, "/api/v2/passengers", `{"passenger_name":"Customer Rider"}`},
		{nightTok, "/api/v2/passengers", `{"passenger_name":"Integration Rider"}`},
	} {
		if r := a.send(http.MethodPost, c.path, c.token, c.body); r.status != http.StatusCreated {
			t.Fatalf("POST %s %s: %d %s", c.path, c.body, r.status, r.raw)
		}
	}
	after := usage()
	for name, u := range before {
		changed := after[name] != u
		if inside := name == "acme" || name == "acme-night"; changed != inside {
			t.Errorf("%s: usage %s → %s (inside the tenant: %t)", name, u, after[name], inside)
		}
	}
}
