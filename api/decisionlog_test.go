package api_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/plugins/logs"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestDecisionLogPrivacy runs requests of every demo token (their secrets
// in the Authorization header, their accounts with usernames and emails)
// and management writes that carry a new account's username and email and
// a token's name through the real router, then reads the decision log: no
// token secret, token hash, username, email or name is in it; every line
// reads as OPA's decision-log event (logs.EventV1) with the path, the
// bundle revision, the input and the result; the management records list
// the erased fields.
func TestDecisionLogPrivacy(t *testing.T) {
	log := &lockedBuffer{}
	a := newTestAPIWith(t, func(c *api.Config) {})
	// The same database and router with a decision log.
	engine, err := policy.New(t.Context(), policy.Options{DecisionLog: log, Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: a.store}, Policy: engine, Store: a.store, Ready: a.store})
	if err != nil {
		t.Fatal(err)
	}
	a.handler = srv.Handler()

	var secrets []string
	for _, d := range demodata.Tokens() {
		a.get("/api/v2/services", d.Secret)
		a.get("/api/v2/me", d.Secret)
		h, err := tenancy.HashToken(d.Secret)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, d.Secret, d.Secret[4:], hex.EncodeToString(h[:]))
	}
	admin := demoToken(t, "admin-all")
	body := `{"username":"privacy-probe","email":"probe.person@privacy.test","type":"manager"}`
	if r := a.send("POST", "/api/v2/accounts", admin, body); r.status != 201 {
		t.Fatalf("create account: %d %s", r.status, r.raw)
	}
	id := a.accountID(t, "privacy-probe")
	tok := fmt.Sprintf(`{"account_id":%d,"name":"probe-token-name","permissions":["GET /services"]}`, id)
	if r := a.send("POST", "/api/v2/tokens", admin, tok); r.status != 201 {
		t.Fatalf("create token: %d %s", r.status, r.raw)
	}
	out := log.String()
	personal := []string{"privacy-probe", "probe.person@privacy.test", "probe-token-name", "@fleetapi.example", ".example\""}
	for _, d := range demodata.Tokens() {
		switch d.Username {
		case "admin", "manager", "user", "subaccount": // also an account type, which the log holds
		default:
			personal = append(personal, `"`+d.Username+`"`)
		}
	}
	for _, s := range append(secrets, personal...) {
		if strings.Contains(out, s) {
			t.Errorf("the decision log holds %q", s)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2*len(demodata.Tokens())+2 {
		t.Fatalf("%d decision records", len(lines))
	}
	var erased []string
	for i, l := range lines {
		var ev logs.EventV1
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %d is not an OPA decision-log event: %v\n%s", i, err, l)
		}
		if ev.DecisionID == "" || ev.Timestamp.IsZero() || ev.Bundles["fleet"].Revision != engine.Revision() ||
			(ev.Path != policy.DecisionPath && ev.Path != policy.ManagementDecisionPath) || ev.Input == nil {
			t.Errorf("line %d: %+v", i, ev)
		}
		if _, ok := ev.Metrics["timer_rego_query_eval_ns"]; !ok {
			t.Errorf("line %d has no timer_rego_query_eval_ns: %v", i, ev.Metrics)
		}
		erased = append(erased, ev.Erased...)
	}
	for _, f := range []string{"/input/change/username", "/input/change/email", "/input/change/name"} {
		if !strings.Contains(strings.Join(erased, " "), f) {
			t.Errorf("erased %v lacks %s", erased, f)
		}
	}
}
