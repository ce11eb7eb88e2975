package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// accountID returns the id of a demo account.
func (a *testAPI) accountID(t *testing.T, username string) int64 {
	t.Helper()
	var id int64
	if err := a.db.NewRaw("SELECT id FROM accounts WHERE username = ?", username).Scan(context.Background(), &id); err != nil {
		t.Fatalf("account %s: %v", username, err)
	}
	return id
}

// demoWebhookID is the id of the demo webhook of the account username
// (storage/demodata: one per account that has one).
func (a *testAPI) demoWebhookID(t *testing.T, username string) int64 {
	t.Helper()
	var id int64
	if err := a.db.NewRaw("SELECT min(w.id) FROM webhooks w JOIN accounts a ON a.id = w.account_id WHERE a.username = ?",
		username).Scan(context.Background(), &id); err != nil {
		t.Fatalf("demo webhook of %s: %v", username, err)
	}
	return id
}

// demoZoneID is the id of the first demo zone of the account username of
// that kind (storage/demodata: acme and globex have a circle and a
// polygon).
func (a *testAPI) demoZoneID(t *testing.T, username, kind string) int64 {
	t.Helper()
	var id int64
	if err := a.db.NewRaw("SELECT min(z.id) FROM zones z JOIN accounts a ON a.id = z.account_id WHERE a.username = ? AND z.kind = ?",
		username, kind).Scan(context.Background(), &id); err != nil || id == 0 {
		t.Fatalf("demo %s zone of %s: %d, %v", kind, username, id, err)
	}
	return id
}

// auditCount counts the audit rows.
func (a *testAPI) auditCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := a.db.NewRaw("SELECT count(*) FROM audit_events").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (a *testAPI) send(method, path, token, body string, headers ...string) response {
	a.t.Helper()
	h := append([]string{"Authorization", "Bearer " + token, "Content-Type", "application/json"}, headers...)
	return a.do(method, path, strings.NewReader(body), h...)
}

// denial checks a status and code, and for MANAGEMENT_DENIED the reason.
func denial(t *testing.T, r response, status int, code, reason string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if got := r.errorCode(t); got != code {
		t.Fatalf("code %s, want %s: %s", got, code, r.raw)
	}
	if reason != "" {
		d, _ := r.body["error"].(map[string]any)["details"].(map[string]any)
		if d["reason"] != reason {
			t.Fatalf("reason %v, want %s: %s", d["reason"], reason, r.raw)
		}
	}
}

// TestAccountCreateRules runs POST /accounts for every account type as
// caller over every kind of new account and place in the tree, and checks
// each answer against docs/design.md §9; a denied or failed create stores no
// account and no audit row, an allowed one exactly one.
func TestAccountCreateRules(t *testing.T) {
	a := newTestAPI(t)
	ids := map[string]int64{}
	for _, u := range []string{"admin", "fleetco", "acme", "acme-night", "northwind", "tailspin", "globex"} {
		ids[u] = a.accountID(t, u)
	}
	type tc struct {
		caller, typ, under string // under: "" for the top
		status             int
		code, reason       string
	}
	cases := []tc{
		// admin: managers at the top or under an admin, users at the top,
		// under an admin or a manager (fixed levels, docs/design.md §2: never a
		// manager under a manager); no admin; nothing under a user.
		{"admin-all", "manager", "", 201, "", ""},
		{"admin-all", "user", "", 201, "", ""},
		{"admin-all", "user", "fleetco", 201, "", ""},
		{"admin-all", "manager", "admin", 201, "", ""},
		{"admin-all", "user", "admin", 201, "", ""},
		{"admin-all", "manager", "fleetco", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"admin-all", "manager", "northwind", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"admin-all", "subaccount", "admin", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"admin-all", "admin", "", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"admin-all", "subaccount", "acme", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"admin-all", "user", "acme", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		// manager: users under itself, subaccounts under its users.
		{"fleetco-all", "user", "fleetco", 201, "", ""},
		{"fleetco-all", "subaccount", "acme", 201, "", ""},
		{"fleetco-all", "manager", "fleetco", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"fleetco-all", "manager", "", 403, "MANAGEMENT_DENIED", ""},
		{"fleetco-all", "subaccount", "fleetco", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"fleetco-all", "admin", "fleetco", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"fleetco-all", "user", "northwind", 404, "NOT_FOUND", ""},      // another tenant's manager
		{"fleetco-all", "subaccount", "tailspin", 404, "NOT_FOUND", ""}, // another tenant's user
		// user: subaccounts under itself only.
		{"acme-all", "subaccount", "acme", 201, "", ""},
		{"acme-all", "user", "acme", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"acme-all", "subaccount", "globex", 404, "NOT_FOUND", ""},
		{"acme-all", "subaccount", "fleetco", 404, "NOT_FOUND", ""},
		{"acme-all", "user", "", 403, "MANAGEMENT_DENIED", ""},
		// subaccount: nothing.
		{"acme-night-all", "subaccount", "acme-night", 403, "MANAGEMENT_DENIED", "not_below_caller"},
		{"acme-night-all", "subaccount", "acme", 404, "NOT_FOUND", ""},
		// read-only caller and a token without the permission: the route decision.
		{"umbrella-all", "subaccount", "", 403, "READ_ONLY_ACCOUNT", ""},
		{"globex-read", "subaccount", "globex", 403, "TOKEN_PERMISSION_DENIED", ""},
		{"acme-services-only", "subaccount", "acme", 403, "TOKEN_PERMISSION_DENIED", ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s_%s_under_%s", c.caller, c.typ, c.under), func(t *testing.T) {
			name := fmt.Sprintf("new-%d", i)
			body := map[string]any{"username": name, "email": name + "@example.com", "type": c.typ}
			if c.under != "" {
				body["manager_id"] = ids[c.under]
			}
			b, _ := json.Marshal(body)
			before := a.auditCount(t)
			r := a.send("POST", "/api/v2/accounts", demoToken(t, c.caller), string(b))
			var n int
			if err := a.db.NewRaw("SELECT count(*) FROM accounts WHERE username = ?", name).Scan(context.Background(), &n); err != nil {
				t.Fatal(err)
			}
			if c.status != 201 {
				denial(t, r, c.status, c.code, c.reason)
				if n != 0 || a.auditCount(t) != before {
					t.Fatalf("a refused create stored %d accounts, audit rows %d → %d", n, before, a.auditCount(t))
				}
				return
			}
			if r.status != 201 {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			d := r.data(t)
			if d["username"] != name || d["type"] != c.typ || d["active"] != true || d["read_only"] != false ||
				d["account_expire"] != false || d["account_expire_dt"] != nil {
				t.Fatalf("created %v", d)
			}
			if c.under == "" && d["manager_id"] != nil || c.under != "" && d["manager_id"] != float64(ids[c.under]) {
				t.Fatalf("manager_id %v, want under %q", d["manager_id"], c.under)
			}
			if n != 1 || a.auditCount(t) != before+1 {
				t.Fatalf("created: %d accounts, audit rows %d → %d", n, before, a.auditCount(t))
			}
		})
	}
}

// TestAccountCreateBodies: malformed, invalid, oversized and duplicate
// bodies, privileges on a non-subaccount, privileges the caller does not
// hold, and Idempotency-Key replay and reuse.
func TestAccountCreateBodies(t *testing.T) {
	a := newTestAPI(t)
	acme := a.accountID(t, "acme")
	fleetco := fmt.Sprint(a.accountID(t, "fleetco"))
	tok := demoToken(t, "fleetco-all")
	sub := func(extra string) string {
		return fmt.Sprintf(`{"username":"acme-b","type":"subaccount","manager_id":%d%s}`, acme, extra)
	}
	bad := []struct {
		name, body string
		status     int
		code       string
	}{
		{"not json", `{"username":`, 400, "INVALID_BODY"},
		{"array", `[]`, 400, "INVALID_BODY"},
		{"unknown field", sub(`,"password":"x"`), 400, "INVALID_BODY"},
		{"case-folded key", `{"USERNAME":"x","type":"user"}`, 400, "INVALID_BODY"},
		{"duplicate key", sub(`,"type":"user"`), 400, "INVALID_BODY"},
		{"wrong type", sub(`,"active":"yes"`), 400, "INVALID_BODY"},
		{"manager_id string", `{"username":"x","type":"user","manager_id":"` + fleetco + `"}`, 400, "INVALID_BODY"},
		{"no username", `{"type":"user","manager_id":` + fleetco + `}`, 400, "VALIDATION_FAILED"},
		{"bad username", `{"username":" x","type":"user","manager_id":` + fleetco + `}`, 400, "VALIDATION_FAILED"},
		{"long username", `{"username":"` + strings.Repeat("x", 101) + `","type":"user","manager_id":` + fleetco + `}`, 400, "VALIDATION_FAILED"},
		{"bad type", `{"username":"x","type":"root","manager_id":` + fleetco + `}`, 400, "VALIDATION_FAILED"},
		{"bad email", sub(`,"email":"not-an-address"`), 400, "VALIDATION_FAILED"},
		{"bad date", sub(`,"account_expire_dt":"2026-02-30"`), 400, "VALIDATION_FAILED"},
		{"zero manager", `{"username":"x","type":"user","manager_id":0}`, 400, "VALIDATION_FAILED"},
		{"unknown privilege", sub(`,"privileges":["admin"]`), 400, "VALIDATION_FAILED"},
		{"privileges on a user", `{"username":"x","type":"user","manager_id":` + fleetco + `,"privileges":["reports"]}`, 400, "VALIDATION_FAILED"},
		{"NUL in username", `{"username":"x\u0000","type":"user"}`, 400, "VALIDATION_FAILED"},
		{"oversized", sub(`,"email":"` + strings.Repeat("x", 70000) + `"`), 413, "PAYLOAD_TOO_LARGE"},
		{"missing manager", `{"username":"xx","type":"user","manager_id":999999999}`, 404, "NOT_FOUND"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			denial(t, a.send("POST", "/api/v2/accounts", tok, c.body), c.status, c.code, "")
		})
	}
	if n := a.auditCount(t); n != 0 {
		t.Fatalf("%d audit rows after refused bodies", n)
	}
	denial(t, a.do("POST", "/api/v2/accounts", strings.NewReader(sub("")), "Authorization", "Bearer "+tok, "Content-Type", "text/plain"),
		415, "UNSUPPORTED_MEDIA_TYPE", "")

	// A subaccount created by acme's user may get only what acme holds
	// (both privileges); a subaccount (acme-night, reports only) creates
	// nothing anyway. Duplicate usernames are 409.
	r := a.send("POST", "/api/v2/accounts", demoToken(t, "acme-all"), sub(`,"privileges":["reports","event_notifications"]`))
	if r.status != 201 {
		t.Fatalf("create with privileges: %d %s", r.status, r.raw)
	}
	if p, _ := json.Marshal(r.data(t)["privileges"]); string(p) != `["event_notifications","reports"]` {
		t.Fatalf("privileges %s", p)
	}
	denial(t, a.send("POST", "/api/v2/accounts", tok, sub("")), 409, "CONFLICT", "")
	denial(t, a.send("POST", "/api/v2/accounts", tok, `{"username":"acme-night","type":"user","manager_id":`+fleetco+`}`), 409, "CONFLICT", "")
	if n := a.auditCount(t); n != 1 {
		t.Fatalf("%d audit rows, want 1 (conflicts store none)", n)
	}

	// Idempotency-Key: a replay returns the first response and stores
	// nothing; the key with another body is 409.
	body := `{"username":"idem-1","type":"user","manager_id":` + fleetco + `}`
	first := a.send("POST", "/api/v2/accounts", tok, body, "Idempotency-Key", "k-1")
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	again := a.send("POST", "/api/v2/accounts", tok, body, "Idempotency-Key", "k-1")
	if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.data(t)["id"] != first.data(t)["id"] {
		t.Fatalf("replay: %d %s %s", again.status, again.header.Get("Idempotent-Replayed"), again.raw)
	}
	denial(t, a.send("POST", "/api/v2/accounts", tok, `{"username":"idem-2","type":"user","manager_id":`+fleetco+`}`, "Idempotency-Key", "k-1"),
		409, "IDEMPOTENCY_KEY_REUSED", "")
	if n := a.auditCount(t); n != 2 {
		t.Fatalf("%d audit rows, want 2 (a replay stores none)", n)
	}
	// A passenger create with the same key is another request.
	denial(t, a.send("POST", "/api/v2/passengers", tok, `{"passenger_name":"x"}`, "Idempotency-Key", "k-1"), 409, "IDEMPOTENCY_KEY_REUSED", "")
}

// TestAccountPatchRules: PATCH for every caller type on itself, its
// accounts, and other tenants' accounts; the own_account rule for every
// limit; immutable and unknown fields; privileges not held; audit rows
// with exactly the changed fields.
func TestAccountPatchRules(t *testing.T) {
	a := newTestAPI(t)
	id := func(u string) string { return fmt.Sprint(a.accountID(t, u)) }
	path := func(u string) string { return "/api/v2/accounts/" + id(u) }
	// Own limits: nobody changes its own active, read_only, account_expire, account_expire_dt, privileges.
	limits := []string{`{"active":true}`, `{"read_only":false}`, `{"account_expire":false}`, `{"account_expire_dt":null}`, `{"account_expire_dt":"2030-01-01"}`}
	for _, self := range []struct{ token, user string }{{"admin-all", "admin"}, {"fleetco-all", "fleetco"}, {"acme-all", "acme"}, {"acme-night-all", "acme-night"}} {
		for _, body := range limits {
			denial(t, a.send("PATCH", path(self.user), demoToken(t, self.token), body), 403, "MANAGEMENT_DENIED", "own_account")
		}
	}
	denial(t, a.send("PATCH", path("acme-night"), demoToken(t, "acme-night-all"), `{"privileges":["reports","event_notifications"]}`), 403, "MANAGEMENT_DENIED", "own_account")
	// Own email is allowed.
	if r := a.send("PATCH", path("acme"), demoToken(t, "acme-all"), `{"email":"new@acme.example"}`); r.status != 200 || r.data(t)["email"] != "new@acme.example" {
		t.Fatalf("own email: %d %s", r.status, r.raw)
	}
	// Other tenants and missing ids: 404, the same answer.
	for _, c := range []struct{ token, target string }{
		{"fleetco-all", path("tailspin")}, {"fleetco-all", path("northwind")}, {"fleetco-all", path("admin")},
		{"acme-all", path("globex")}, {"acme-all", path("globex-day")}, {"acme-all", path("fleetco")},
		{"acme-night-all", path("acme")}, {"fleetco-all", "/api/v2/accounts/999999999"},
	} {
		r := a.send("PATCH", c.target, demoToken(t, c.token), `{"email":"x@x.example"}`)
		denial(t, r, 404, "NOT_FOUND", "")
		g := a.get(c.target, demoToken(t, c.token))
		denial(t, g, 404, "NOT_FOUND", "")
	}
	// Immutable and unknown fields.
	for _, body := range []string{`{"type":"manager"}`, `{"manager_id":1}`, `{"username":"x"}`, `{"id":1}`, `{"created_at":"2026-01-01T00:00:00Z"}`, `{"secret":"x"}`} {
		denial(t, a.send("PATCH", path("acme"), demoToken(t, "fleetco-all"), body), 400, "INVALID_BODY", "")
	}
	for _, body := range []string{`{}`, `{"active":null}`, `{"email":null}`, `{"email":"bad"}`, `{"account_expire_dt":"tomorrow"}`, `{"privileges":["reports"]}`} {
		denial(t, a.send("PATCH", path("acme"), demoToken(t, "fleetco-all"), body), 400, "VALIDATION_FAILED", "")
	}
	// A list is never null (the document says array): the wrong type.
	denial(t, a.send("PATCH", path("acme"), demoToken(t, "fleetco-all"), `{"privileges":null}`), 400, "INVALID_BODY", "")
	// Privileges only from those the caller holds: acme holds both; a
	// manager also; unknown names are 400.
	denial(t, a.send("PATCH", path("acme-night"), demoToken(t, "acme-all"), `{"privileges":["bogus"]}`), 400, "VALIDATION_FAILED", "")
	// Read-only caller and token without the permission.
	denial(t, a.send("PATCH", path("umbrella"), demoToken(t, "umbrella-all"), `{"email":"x@x.example"}`), 403, "READ_ONLY_ACCOUNT", "")
	denial(t, a.send("PATCH", path("acme-night"), demoToken(t, "globex-read"), `{"email":"x@x.example"}`), 403, "TOKEN_PERMISSION_DENIED", "")
	if n := a.auditCount(t); n != 1 {
		t.Fatalf("%d audit rows, want 1 (the own email)", n)
	}

	// A manager suspends its user and sets its expiry: exactly the changed fields are audited.
	r := a.send("PATCH", path("acme"), demoToken(t, "fleetco-all"), `{"active":false,"read_only":false,"account_expire":true,"account_expire_dt":"2030-06-30"}`)
	if r.status != 200 {
		t.Fatalf("suspend: %d %s", r.status, r.raw)
	}
	d := r.data(t)
	if d["active"] != false || d["account_expire"] != true || d["account_expire_dt"] != "2030-06-30" {
		t.Fatalf("after patch %v", d)
	}
	var changes string
	if err := a.db.NewRaw("SELECT changes::text FROM audit_events ORDER BY id DESC LIMIT 1").Scan(context.Background(), &changes); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal([]byte(changes), &got)
	want := `{"account_expire":{"after":true,"before":false},"account_expire_dt":{"after":"2030-06-30","before":null},"active":{"after":false,"before":true}}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Fatalf("changes %s, want %s", b, want)
	}
	// The user's subaccount privileges, by the user itself.
	r = a.send("PATCH", path("acme-night"), demoToken(t, "admin-all"), `{"privileges":["event_notifications","reports"]}`)
	if r.status != 200 {
		t.Fatalf("admin sets privileges: %d %s", r.status, r.raw)
	}
}

// TestAuditEventsScoped: GET /audit-events shows the events whose target
// is in the caller's management scope, newest first, with filters; and no
// audit row holds a secret or a hash.
func TestAuditEventsScoped(t *testing.T) {
	a := newTestAPI(t)
	fleetco := a.accountID(t, "fleetco")
	acme := a.accountID(t, "acme")
	northwind := a.accountID(t, "northwind")
	mustCreate := func(token, body string) map[string]any {
		t.Helper()
		r := a.send("POST", "/api/v2/accounts", demoToken(t, token), body)
		if r.status != 201 {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
		return r.data(t)
	}
	mustCreate("fleetco-all", fmt.Sprintf(`{"username":"u-f","type":"user","manager_id":%d}`, fleetco))
	sub := mustCreate("acme-all", fmt.Sprintf(`{"username":"s-a","type":"subaccount","manager_id":%d,"privileges":["reports"]}`, acme))
	mustCreate("northwind-all", fmt.Sprintf(`{"username":"u-n","type":"user","manager_id":%d}`, northwind))
	if r := a.send("PATCH", fmt.Sprintf("/api/v2/accounts/%v", sub["id"]), demoToken(t, "acme-all"), `{"read_only":true}`); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.raw)
	}
	list := func(token, query string) []any {
		t.Helper()
		r := a.get("/api/v2/audit-events"+query, demoToken(t, token))
		if r.status != 200 {
			t.Fatalf("%s: %d %s", query, r.status, r.raw)
		}
		items, _ := r.body["data"].([]any)
		return items
	}
	actions := func(items []any) string {
		var out []string
		for _, it := range items {
			m := it.(map[string]any)
			out = append(out, fmt.Sprintf("%s:%v", m["action"], m["target_id"]))
		}
		return strings.Join(out, ",")
	}
	subID := sub["id"]
	all := list("admin-all", "")
	if len(all) != 4 || all[0].(map[string]any)["action"] != "account.update" {
		t.Fatalf("admin sees %s, want 4 newest first", actions(all))
	}
	if got := list("fleetco-all", ""); len(got) != 3 {
		t.Fatalf("fleetco sees %s, want its 3 (not northwind's)", actions(got))
	}
	if got := list("acme-all", ""); len(got) != 2 || actions(got) != fmt.Sprintf("account.update:%v,account.create:%v", subID, subID) {
		t.Fatalf("acme sees %s", actions(got))
	}
	if got := list("northwind-all", ""); len(got) != 1 {
		t.Fatalf("northwind sees %s", actions(got))
	}
	if got := list("acme-night-all", ""); len(got) != 0 {
		t.Fatalf("acme-night sees %s", actions(got))
	}
	if got := list("fleetco-all", "?action=account.create&sort=id&order=asc"); len(got) != 2 {
		t.Fatalf("filtered: %s", actions(got))
	}
	if got := list("admin-all", fmt.Sprintf("?actor_account_id=%d", northwind)); len(got) != 1 {
		t.Fatalf("by actor: %s", actions(got))
	}
	if got := list("admin-all", fmt.Sprintf("?target_account_id=%v", subID)); len(got) != 2 {
		t.Fatalf("by target: %s", actions(got))
	}
	for _, q := range []string{"?action=account.delete", "?actor=1", "?sort=changes", "?target_account_id=x", "?per_page=0"} {
		denial(t, a.get("/api/v2/audit-events"+q, demoToken(t, "admin-all")), 400, "INVALID_PARAMETER", "")
	}
	denial(t, a.get("/api/v2/audit-events", demoToken(t, "acme-services-only")), 403, "TOKEN_PERMISSION_DENIED", "")
	// No secret or hash in any audit row.
	var n int
	if err := a.db.NewRaw(`SELECT count(*) FROM audit_events WHERE changes::text ~* '(secret|hash|flt_[0-9A-Za-z]{32}|[0-9a-f]{64})'`).Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d audit rows hold a secret or hash", n)
	}
}

// TestAccountsList: GET /accounts is the management scope, with the list
// conventions.
func TestAccountsList(t *testing.T) {
	a := newTestAPI(t)
	count := func(token, query string) int {
		t.Helper()
		r := a.get("/api/v2/accounts"+query, demoToken(t, token))
		if r.status != 200 {
			t.Fatalf("%s %s: %d %s", token, query, r.status, r.raw)
		}
		items, _ := r.body["data"].([]any)
		return len(items)
	}
	for token, want := range map[string]int{"admin-all": 12, "fleetco-all": 8, "acme-all": 2, "acme-night-all": 1, "northwind-all": 3, "globex-read": 2} {
		if got := count(token, ""); got != want {
			t.Errorf("%s sees %d accounts, want %d", token, got, want)
		}
	}
	if got := count("fleetco-all", "?type=subaccount"); got != 2 {
		t.Errorf("fleetco's subaccounts: %d", got)
	}
	if got := count("fleetco-all", "?active=false"); got != 1 {
		t.Errorf("fleetco's inactive: %d", got)
	}
	if got := count("admin-all", "?search=acme&sort=username&order=desc"); got != 2 {
		t.Errorf("search acme: %d", got)
	}
	for _, q := range []string{"?type=root", "?manager_id=-1", "?active=yes", "?sort=email", "?nope=1", "?read_only=1"} {
		denial(t, a.get("/api/v2/accounts"+q, demoToken(t, "admin-all")), 400, "INVALID_PARAMETER", "")
	}
	r := a.get(fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, "acme-night")), demoToken(t, "acme-all"))
	d := r.data(t)
	if d["type"] != "subaccount" || d["active"] != true || d["manager_id"] != float64(a.accountID(t, "acme")) {
		t.Fatalf("GET /accounts/{id}: %v", d)
	}
	denial(t, a.get("/api/v2/accounts/0", demoToken(t, "admin-all")), 400, "INVALID_PARAMETER", "")
}
