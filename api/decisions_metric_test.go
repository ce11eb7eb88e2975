package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestPolicyDecisionSeriesCarryAction: every series of
// fleet_policy_decisions_total has the labels code and action, route
// decisions (allowed and denied) and management decisions alike (issue 19
// item 23: route denials had no action label, management decisions had
// one, so the counter mixed both kinds of series).
func TestPolicyDecisionSeriesCarryAction(t *testing.T) {
	a, metrics := meteredAPI(t)
	acme := a.accountID(t, "acme")
	a.get("/api/v2/services", demoToken(t, "acme-all"))                 // route, ALLOW
	a.get("/api/v2/reports", demoToken(t, "acme-services-only"))        // route, TOKEN_PERMISSION_DENIED
	a.send(http.MethodPost, "/api/v2/tokens", demoToken(t, "acme-all"), // token.create, ALLOW
		`{"name":"metric","permissions":["GET /me"]}`)
	a.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", acme), demoToken(t, "acme-all"), // account.update, MANAGEMENT_DENIED
		`{"read_only":true}`)
	want := map[string]bool{
		`code="ALLOW"`: false, `code="TOKEN_PERMISSION_DENIED"`: false, `code="MANAGEMENT_DENIED"`: false,
		`action="route"`: false, `action="token.create"`: false, `action="account.update"`: false,
	}
	n := 0
	for _, s := range scrape(t, metrics) {
		if !strings.HasPrefix(s, "fleet_policy_decisions_total{") {
			continue
		}
		n++
		if !strings.Contains(s, `code="`) || !strings.Contains(s, `action="`) {
			t.Errorf("series without code or action: %s", s)
		}
		for w := range want {
			if strings.Contains(s, w) {
				want[w] = true
			}
		}
	}
	for w, seen := range want {
		if !seen {
			t.Errorf("no series with %s", w)
		}
	}
	if n < 4 {
		t.Fatalf("%d series of fleet_policy_decisions_total", n)
	}
}
