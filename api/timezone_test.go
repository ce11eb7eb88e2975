package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// badTimezones are values an account's timezone refuses: empty, the
// server's own zone, paths, control characters, unknown names, the system
// directories' aliases the embedded database does not hold, too long.
var badTimezones = []string{
	``, `Local`, `../../etc/passwd`, `/UTC`, `UTC\u0000`, `Europe/../UTC`, `Mars/Olympus_Mons`, `utc `,
	`Europe//Paris`, `posix/Europe/Paris`, `right/UTC`, `Europe/Paris\n`, `America/Argentina/Buenos_Aires/X`,
	`AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`,
}

// timezoneField checks a 400 VALIDATION_FAILED that names the field
// timezone.
func timezoneField(t *testing.T, r response) {
	t.Helper()
	denial(t, r, 400, "VALIDATION_FAILED", "")
	fields, _ := r.body["error"].(map[string]any)["details"].(map[string]any)["fields"].(map[string]any)
	if _, ok := fields["timezone"]; !ok {
		t.Fatalf("the error does not name timezone: %s", r.raw)
	}
}

// TestAccountTimezone: POST /accounts sets timezone (default UTC), PATCH
// changes it (one's own too), GET /accounts, /accounts/{id} and /me show
// it, the change is audited; every bad name is 400 naming the field and
// stores nothing.
func TestAccountTimezone(t *testing.T) {
	a := newTestAPI(t)
	fleetco := a.accountID(t, "fleetco")
	tok := demoToken(t, "fleetco-all")
	for i, tz := range badTimezones {
		body := fmt.Sprintf(`{"username":"tz-bad-%d","type":"user","manager_id":%d,"timezone":"%s"}`, i, fleetco, tz)
		timezoneField(t, a.send("POST", "/api/v2/accounts", tok, body))
		timezoneField(t, a.send("PATCH", fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, "acme")), tok, `{"timezone":"`+tz+`"}`))
	}
	timezoneField(t, a.send("PATCH", fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, "acme")), tok, `{"timezone":null}`))
	denial(t, a.send("PATCH", fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, "acme")), tok, `{"timezone":7}`), 400, "INVALID_BODY", "")
	if n := a.auditCount(t); n != 0 {
		t.Fatalf("%d audit rows after refused time zones", n)
	}

	r := a.send("POST", "/api/v2/accounts", tok, fmt.Sprintf(`{"username":"tz-default","type":"user","manager_id":%d}`, fleetco))
	if r.status != 201 || r.data(t)["timezone"] != "UTC" {
		t.Fatalf("default: %d %s", r.status, r.raw)
	}
	r = a.send("POST", "/api/v2/accounts", tok, fmt.Sprintf(`{"username":"tz-lisbon","type":"user","manager_id":%d,"timezone":"Europe/Lisbon"}`, fleetco))
	if r.status != 201 || r.data(t)["timezone"] != "Europe/Lisbon" {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	id := a.accountID(t, "tz-lisbon")
	if g := a.get(fmt.Sprintf("/api/v2/accounts/%d", id), tok); g.data(t)["timezone"] != "Europe/Lisbon" {
		t.Fatalf("GET /accounts/{id}: %s", g.raw)
	}
	list := a.get("/api/v2/accounts?per_page=500", tok)
	found := false
	for _, item := range list.body["data"].([]any) {
		m := item.(map[string]any)
		if m["username"] == "tz-lisbon" {
			found = m["timezone"] == "Europe/Lisbon"
		}
		if _, ok := m["timezone"]; !ok {
			t.Fatalf("GET /accounts item without timezone: %v", m)
		}
	}
	if !found {
		t.Fatalf("GET /accounts does not show tz-lisbon's timezone: %s", list.raw)
	}

	// A user changes its own time zone (not a limit); /me shows it.
	acme := a.accountID(t, "acme")
	if me := a.get("/api/v2/me", demoToken(t, "acme-all")); me.data(t)["timezone"] != "UTC" {
		t.Fatalf("/me before: %s", me.raw)
	}
	r = a.send("PATCH", fmt.Sprintf("/api/v2/accounts/%d", acme), demoToken(t, "acme-all"), `{"timezone":"America/Argentina/Buenos_Aires"}`)
	if r.status != 200 || r.data(t)["timezone"] != "America/Argentina/Buenos_Aires" {
		t.Fatalf("own timezone: %d %s", r.status, r.raw)
	}
	var changes string
	if err := a.db.NewRaw("SELECT changes::text FROM audit_events ORDER BY id DESC LIMIT 1").Scan(context.Background(), &changes); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal([]byte(changes), &got)
	want := `{"timezone":{"after":"America/Argentina/Buenos_Aires","before":"UTC"}}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Fatalf("audited %s, want %s", b, want)
	}
	if me := a.get("/api/v2/me", demoToken(t, "acme-all")); me.data(t)["timezone"] != "America/Argentina/Buenos_Aires" {
		t.Fatalf("/me after: %s", me.raw)
	}
}
