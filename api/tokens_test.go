package api_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/tenancy"
)

// secretPattern is a token secret (docs/design.md §3) anywhere in a text.
var secretPattern = regexp.MustCompile(`flt_[0-9A-Za-z]{32}`)

// mintToken creates a token through the store (as the CLI does) and
// returns its secret.
func (a *testAPI) mintToken(t *testing.T, username, name string, perms []string, expires *time.Time, rate int) string {
	t.Helper()
	secret, _, err := a.store.CreateToken(context.Background(), storage.NewToken{Username: username, Name: name,
		Permissions: perms, ExpiresAt: expires, RateLimit: rate})
	if err != nil {
		t.Fatalf("token %s: %v", name, err)
	}
	return secret
}

// tokenCount counts the token rows.
func (a *testAPI) tokenCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := a.db.NewRaw("SELECT count(*) FROM tokens").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// hashForms are the encodings a stored token hash could be leaked in.
func hashForms(h []byte) []string {
	return []string{hex.EncodeToString(h), strings.ToUpper(hex.EncodeToString(h)), base64.StdEncoding.EncodeToString(h),
		base64.RawStdEncoding.EncodeToString(h), base64.URLEncoding.EncodeToString(h), base64.RawURLEncoding.EncodeToString(h)}
}

// noSecrets fails when raw holds a token secret or any form of a stored
// token hash.
func (a *testAPI) noSecrets(t *testing.T, what string, raw []byte) {
	t.Helper()
	if secretPattern.Match(raw) || strings.Contains(string(raw), "flt_") {
		t.Fatalf("%s holds a token secret: %s", what, raw)
	}
	var hashes [][]byte
	if err := a.db.NewRaw("SELECT hash FROM tokens").Scan(context.Background(), &hashes); err != nil || len(hashes) == 0 {
		t.Fatalf("hashes: %v (%d)", err, len(hashes))
	}
	for _, h := range hashes {
		for _, f := range hashForms(h) {
			if strings.Contains(string(raw), f) {
				t.Fatalf("%s holds a token hash (%s): %s", what, f, raw)
			}
		}
	}
	if strings.Contains(strings.ToLower(string(raw)), `"hash"`) || strings.Contains(string(raw), `"secret"`) {
		t.Fatalf("%s names a secret or hash field: %s", what, raw)
	}
}

// TestTokenCreateRules runs POST /tokens for callers of every kind and
// limit over every rule of docs/design.md §9 (scope, exceeds_token by permission,
// expiry and rate limit, inheritance of omitted limits, write access,
// permission, duplicate names): an allowed create stores one token and one
// audit row, and the new token works on the next request as its owner; a
// refused one stores neither.
func TestTokenCreateRules(t *testing.T) {
	a := newTestAPI(t)
	ids := map[string]int64{}
	for _, u := range []string{"admin", "fleetco", "acme", "acme-night", "globex", "tailspin", "northwind"} {
		ids[u] = a.accountID(t, u)
	}
	exp := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	narrow := a.mintToken(t, "acme", "narrow", []string{"GET *", "POST /tokens"}, &exp, 30)
	noDelete := a.mintToken(t, "acme", "no-delete", []string{"GET /services", "POST /tokens"}, nil, 0)
	rfc := func(d time.Duration) string { return exp.Add(d).Format(time.RFC3339) }
	type tc struct {
		name, caller string // caller: a demo token name, or a secret
		body         map[string]any
		status       int
		code, reason string
		owner        string // the account of the created token
		wantExpires  *time.Time
		wantRate     any // float64 or nil
	}
	cases := []tc{
		{"own account, inherits no limits", "acme-all", map[string]any{"permissions": []string{"GET /services"}}, 201, "", "", "acme", nil, nil},
		{"own subaccount", "acme-all", map[string]any{"account_id": ids["acme-night"], "permissions": []string{"*"}}, 201, "", "", "acme-night", nil, nil},
		{"sibling user", "acme-all", map[string]any{"account_id": ids["globex"], "permissions": []string{}}, 404, "NOT_FOUND", "", "", nil, nil},
		{"own manager", "acme-all", map[string]any{"account_id": ids["fleetco"], "permissions": []string{}}, 404, "NOT_FOUND", "", "", nil, nil},
		{"other tenant", "acme-all", map[string]any{"account_id": ids["tailspin"], "permissions": []string{}}, 404, "NOT_FOUND", "", "", nil, nil},
		{"missing account", "acme-all", map[string]any{"account_id": 999999, "permissions": []string{}}, 404, "NOT_FOUND", "", "", nil, nil},
		{"manager for its user", "fleetco-all", map[string]any{"account_id": ids["acme"], "permissions": []string{"GET *"}}, 201, "", "", "acme", nil, nil},
		{"manager for another manager's user", "fleetco-all", map[string]any{"account_id": ids["tailspin"], "permissions": []string{}}, 404, "NOT_FOUND", "", "", nil, nil},
		{"admin for anyone", "admin-all", map[string]any{"account_id": ids["tailspin"], "permissions": []string{"*"}}, 201, "", "", "tailspin", nil, nil},
		{"subaccount for itself", "acme-night-all", map[string]any{"permissions": []string{"GET *"}}, 201, "", "", "acme-night", nil, nil},
		{"subaccount for its parent", "acme-night-all", map[string]any{"account_id": ids["acme"], "permissions": []string{}}, 404, "NOT_FOUND", "", "", nil, nil},
		// exceeds_token by permission
		{"narrow: *", narrow, map[string]any{"permissions": []string{"*"}}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"narrow: POST *", narrow, map[string]any{"permissions": []string{"POST *"}}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"narrow: POST /accounts", narrow, map[string]any{"permissions": []string{"GET /me", "POST /accounts"}}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"narrow: DELETE /tokens/{id}", narrow, map[string]any{"permissions": []string{"DELETE /tokens/{id}"}}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"no-delete: GET *", noDelete, map[string]any{"permissions": []string{"GET *"}}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"no-delete: GET /events", noDelete, map[string]any{"permissions": []string{"GET /events"}}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"no-delete: GET /services", noDelete, map[string]any{"permissions": []string{"GET /services"}}, 201, "", "", "acme", nil, nil},
		{"narrow: routes under GET *", narrow, map[string]any{"permissions": []string{"GET /services", "GET /events/{id}", "POST /tokens"}}, 201, "", "", "acme", &exp, 30.0},
		// exceeds_token by expiry
		{"narrow: later expiry", narrow, map[string]any{"permissions": []string{"GET *"}, "expires_at": rfc(time.Hour)}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"narrow: same expiry", narrow, map[string]any{"permissions": []string{"GET *"}, "expires_at": rfc(0)}, 201, "", "", "acme", &exp, 30.0},
		{"narrow: earlier expiry", narrow, map[string]any{"permissions": []string{"GET *"}, "expires_at": rfc(-time.Hour)}, 201, "", "", "acme", ptrTime(exp.Add(-time.Hour)), 30.0},
		{"narrow: null expiry inherits", narrow, map[string]any{"permissions": []string{"GET *"}, "expires_at": nil}, 201, "", "", "acme", &exp, 30.0},
		// exceeds_token by rate limit
		{"narrow: higher rate", narrow, map[string]any{"permissions": []string{"GET *"}, "rate_limit": 31}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"narrow: equal rate", narrow, map[string]any{"permissions": []string{"GET *"}, "rate_limit": 30}, 201, "", "", "acme", &exp, 30.0},
		{"narrow: lower rate", narrow, map[string]any{"permissions": []string{"GET *"}, "rate_limit": 1}, 201, "", "", "acme", &exp, 1.0},
		{"default rate: above the server default", "acme-all", map[string]any{"permissions": []string{"GET *"}, "rate_limit": api.DefaultRateLimit + 1}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"default rate: the server default", "acme-all", map[string]any{"permissions": []string{"GET *"}, "rate_limit": api.DefaultRateLimit}, 201, "", "", "acme", nil, float64(api.DefaultRateLimit)},
		{"own rate limit 5: 6", "acme-ratelimited", map[string]any{"permissions": []string{"GET *"}, "rate_limit": 6}, 403, "MANAGEMENT_DENIED", "exceeds_token", "", nil, nil},
		{"own rate limit 5 inherited", "acme-ratelimited", map[string]any{"permissions": []string{"GET *"}}, 201, "", "", "acme", nil, 5.0},
		// the route decision: write access and the permission
		{"read-only caller", "umbrella-all", map[string]any{"permissions": []string{}}, 403, "READ_ONLY_ACCOUNT", "", "", nil, nil},
		{"no POST /tokens", "acme-services-only", map[string]any{"permissions": []string{"GET /services"}}, 403, "TOKEN_PERMISSION_DENIED", "", "", nil, nil},
		{"GET * only", "globex-read", map[string]any{"permissions": []string{"GET /services"}}, 403, "TOKEN_PERMISSION_DENIED", "", "", nil, nil},
		// permissions that match no route: one validation with the CLI
		{"misspelt route", "acme-all", map[string]any{"permissions": []string{"GET /servics"}}, 400, "VALIDATION_FAILED", "", "", nil, nil},
		{"method the route lacks", "acme-all", map[string]any{"permissions": []string{"PUT /services"}}, 400, "VALIDATION_FAILED", "", "", nil, nil},
		{"raw path", "acme-all", map[string]any{"permissions": []string{"GET /events/12"}}, 400, "VALIDATION_FAILED", "", "", nil, nil},
		{"past expiry", "acme-all", map[string]any{"permissions": []string{"GET *"}, "expires_at": "2020-01-01T00:00:00Z"}, 400, "VALIDATION_FAILED", "", "", nil, nil},
	}
	// "M *" is refused while no route has the method M (derived: every
	// method may gain a route).
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if !slices.ContainsFunc(tenancy.Routes(), func(r tenancy.Route) bool { return r.Method == m }) {
			cases = append(cases, tc{"method without routes " + m, "acme-all", map[string]any{"permissions": []string{m + " *"}}, 400, "VALIDATION_FAILED", "", "", nil, nil})
		}
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caller := c.caller
			if !strings.HasPrefix(caller, tenancy.TokenPrefix) {
				caller = demoToken(t, caller)
			}
			body := map[string]any{"name": fmt.Sprintf("rule-%d", i)}
			for k, v := range c.body {
				body[k] = v
			}
			b, _ := json.Marshal(body)
			tokens, audits := a.tokenCount(t), a.auditCount(t)
			r := a.send("POST", "/api/v2/tokens", caller, string(b))
			if c.status != 201 {
				denial(t, r, c.status, c.code, c.reason)
				if a.tokenCount(t) != tokens || a.auditCount(t) != audits {
					t.Fatalf("a refused create stored tokens %d → %d, audit rows %d → %d", tokens, a.tokenCount(t), audits, a.auditCount(t))
				}
				if c.status == 400 && c.code == "VALIDATION_FAILED" && strings.Contains(string(b), "GET /servics") && !strings.Contains(string(r.raw), "GET /servics") {
					t.Fatalf("the error does not name the permission: %s", r.raw)
				}
				return
			}
			if r.status != 201 {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			d := r.data(t)
			secret, _ := d["secret"].(string)
			if !secretPattern.MatchString(secret) || r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("secret %q, Cache-Control %q", secret, r.header.Get("Cache-Control"))
			}
			if d["account_id"] != float64(ids[c.owner]) || d["rate_limit"] != c.wantRate {
				t.Fatalf("account_id %v rate_limit %v, want %d %v", d["account_id"], d["rate_limit"], ids[c.owner], c.wantRate)
			}
			if c.wantExpires == nil && d["expires_at"] != nil {
				t.Fatalf("expires_at %v, want null", d["expires_at"])
			}
			if c.wantExpires != nil {
				got, err := time.Parse(time.RFC3339Nano, fmt.Sprint(d["expires_at"]))
				if err != nil || !got.Equal(*c.wantExpires) {
					t.Fatalf("expires_at %v, want %s", d["expires_at"], c.wantExpires)
				}
			}
			if a.tokenCount(t) != tokens+1 || a.auditCount(t) != audits+1 {
				t.Fatalf("tokens %d → %d, audit rows %d → %d", tokens, a.tokenCount(t), audits, a.auditCount(t))
			}
			// The new token works on the very next request, as its owner.
			me := a.get("/api/v2/me", secret)
			if me.status != 200 || me.data(t)["username"] != c.owner {
				t.Fatalf("GET /me with the new token: %d %s", me.status, me.raw)
			}
			var ev audit.Event
			if err := a.db.NewSelect().Model(&ev).Order("id DESC").Limit(1).Scan(context.Background()); err != nil {
				t.Fatal(err)
			}
			if ev.Action != "token.create" || ev.TargetAccountID != ids[c.owner] || float64(ev.TargetID) != d["id"] {
				t.Fatalf("audit %+v", ev)
			}
			raw, _ := json.Marshal(ev.Changes)
			a.noSecrets(t, "the audit row", raw)
			if _, ok := ev.Changes["permissions"]; !ok {
				t.Fatalf("audit changes %s", raw)
			}
		})
	}
	t.Run("duplicate name", func(t *testing.T) {
		tokens, audits := a.tokenCount(t), a.auditCount(t)
		r := a.send("POST", "/api/v2/tokens", demoToken(t, "acme-all"), `{"name":"rule-0","permissions":[]}`)
		denial(t, r, 409, "CONFLICT", "")
		if a.tokenCount(t) != tokens || a.auditCount(t) != audits {
			t.Fatal("a conflicting create stored something")
		}
		// The same name on another account is another token.
		r = a.send("POST", "/api/v2/tokens", demoToken(t, "acme-all"), fmt.Sprintf(`{"name":"rule-0","permissions":[],"account_id":%d}`, ids["acme-night"]))
		if r.status != 201 {
			t.Fatalf("same name on another account: %d %s", r.status, r.raw)
		}
	})
}

func ptrTime(t time.Time) *time.Time { return &t }

// TestTokenCreateBodies: every malformed POST /tokens body is a 400 with
// a stable code (wrong JSON, unknown and repeated keys, wrong types,
// invalid values), never a 500, and stores nothing.
func TestTokenCreateBodies(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	for _, c := range []struct{ body, code string }{
		{``, "INVALID_BODY"},
		{`not json`, "INVALID_BODY"},
		{`[]`, "INVALID_BODY"},
		{`{"name":"x","permissions":[]`, "INVALID_BODY"},
		{`{"name":"x","permissions":[],"secret":"flt_x"}`, "INVALID_BODY"},
		{`{"name":"x","permissions":[],"hash":"00"}`, "INVALID_BODY"},
		{`{"name":"x","name":"y","permissions":[]}`, "INVALID_BODY"},
		{`{"name":1,"permissions":[]}`, "INVALID_BODY"},
		{`{"name":"x","permissions":"GET *"}`, "INVALID_BODY"},
		{`{"name":"x","permissions":[1]}`, "INVALID_BODY"},
		{`{"name":"x","permissions":[],"rate_limit":"5"}`, "INVALID_BODY"},
		{`{"name":"x","permissions":[],"rate_limit":1.5}`, "INVALID_BODY"},
		{`{"name":"x","permissions":[],"account_id":"1"}`, "INVALID_BODY"},
		{`{"name":"x","permissions":[],"expires_at":5}`, "INVALID_BODY"},
		{`{"permissions":[]}`, "VALIDATION_FAILED"},
		{`{"name":"","permissions":[]}`, "VALIDATION_FAILED"},
		{`{"name":"  ","permissions":[]}`, "VALIDATION_FAILED"},
		{`{"name":"a\u0001b","permissions":[]}`, "VALIDATION_FAILED"},
		{`{"name":"` + strings.Repeat("n", 101) + `","permissions":[]}`, "VALIDATION_FAILED"},
		{`{"name":"x"}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":null}`, "INVALID_BODY"}, // a list is never null
		{`{"name":"x","permissions":[""]}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":["GET"]}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":["get /services"]}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"rate_limit":0}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"rate_limit":-1}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"rate_limit":1000001}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"account_id":0}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"account_id":-3}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"expires_at":"tomorrow"}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"expires_at":"2030-01-01"}`, "VALIDATION_FAILED"},
		{`{"name":"x","permissions":[],"expires_at":"2000-01-01T00:00:00Z"}`, "VALIDATION_FAILED"},
	} {
		t.Run(c.body, func(t *testing.T) {
			tokens, audits := a.tokenCount(t), a.auditCount(t)
			r := a.send("POST", "/api/v2/tokens", tok, c.body)
			denial(t, r, 400, c.code, "")
			if a.tokenCount(t) != tokens || a.auditCount(t) != audits {
				t.Fatal("a malformed body stored something")
			}
		})
	}
	r := a.do("POST", "/api/v2/tokens", strings.NewReader(`{"name":"x","permissions":[]}`), "Authorization", "Bearer "+tok, "Content-Type", "text/plain")
	denial(t, r, 415, "UNSUPPORTED_MEDIA_TYPE", "")
	r = a.send("POST", "/api/v2/tokens?x=1", tok, `{"name":"x","permissions":[]}`)
	denial(t, r, 400, "INVALID_PARAMETER", "")
}

// TestTokenPermissionListBounded (issue 19 item 14): a permission list is
// at most tenancy.MaxPermissions long and holds no permission twice; a
// longer list or a duplicate is 400 VALIDATION_FAILED naming the field,
// and nothing is stored. At the bound, distinct permissions are fine.
func TestTokenPermissionListBounded(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	list := func(perms []string) string {
		b, _ := json.Marshal(map[string]any{"name": "bounded", "permissions": perms})
		return string(b)
	}
	many := make([]string, tenancy.MaxPermissions+1)
	for i := range many {
		many[i] = "GET /services"
	}
	var distinct []string
	for _, r := range tenancy.Routes() {
		distinct = append(distinct, r.String())
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"duplicate", list([]string{"GET /services", "GET /reports", "GET /services"}), `permission "GET /services" is listed twice`},
		{"duplicate_star", list([]string{"*", "*"}), `permission "*" is listed twice`},
		{"over_the_bound", list(many), "65 permissions: a token holds at most 64"},
		{"eight_thousand", list(slices.Repeat([]string{"GET *"}, 8000)), "8000 permissions: a token holds at most 64"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tokens, audits := a.tokenCount(t), a.auditCount(t)
			r := a.send("POST", "/api/v2/tokens", tok, c.body)
			denial(t, r, 400, "VALIDATION_FAILED", "")
			fields, _ := r.body["error"].(map[string]any)["details"].(map[string]any)["fields"].(map[string]any)
			if fields["permissions"] != c.want {
				t.Errorf("details.fields %v, want permissions %q", fields, c.want)
			}
			if a.tokenCount(t) != tokens || a.auditCount(t) != audits {
				t.Fatal("a refused list stored something")
			}
		})
	}
	if len(distinct) > tenancy.MaxPermissions {
		t.Fatalf("%d routes: the bound %d refuses a token naming each route", len(distinct), tenancy.MaxPermissions)
	}
	if r := a.send("POST", "/api/v2/tokens", tok, list(distinct)); r.status != 201 {
		t.Fatalf("every route once: %d %s", r.status, r.raw)
	}
}

// TestTokenSecretShownOnce: the secret is in the first response only
// (Cache-Control: no-store); an Idempotency-Key replay answers the same
// token without it and writes nothing; the key with another body is 409;
// GET /tokens, GET /audit-events and the audit table never hold a secret
// or a hash in any encoding.
func TestTokenSecretShownOnce(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	body := `{"name":"ci","permissions":["GET *"],"rate_limit":60}`
	first := a.send("POST", "/api/v2/tokens", tok, body, "Idempotency-Key", "k1")
	if first.status != 201 || first.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %d %q %s", first.status, first.header.Get("Cache-Control"), first.raw)
	}
	d := first.data(t)
	secret, _ := d["secret"].(string)
	if !secretPattern.MatchString(secret) {
		t.Fatalf("secret %q", secret)
	}
	tokens, audits := a.tokenCount(t), a.auditCount(t)
	replay := a.send("POST", "/api/v2/tokens", tok, body, "Idempotency-Key", "k1")
	if replay.status != 201 || replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", replay.status, replay.raw)
	}
	rd := replay.data(t)
	if _, has := rd["secret"]; has || rd["id"] != d["id"] || rd["name"] != "ci" {
		t.Fatalf("replay: %s", replay.raw)
	}
	a.noSecrets(t, "the replay", replay.raw)
	if a.tokenCount(t) != tokens || a.auditCount(t) != audits {
		t.Fatal("a replay stored something")
	}
	reused := a.send("POST", "/api/v2/tokens", tok, `{"name":"ci2","permissions":["GET *"]}`, "Idempotency-Key", "k1")
	denial(t, reused, 409, "IDEMPOTENCY_KEY_REUSED", "")
	// Revoke one, so that revoked_at is on the wire too.
	if r := a.send("DELETE", fmt.Sprintf("/api/v2/tokens/%v", d["id"]), tok, ""); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	for _, path := range []string{"/api/v2/tokens?per_page=500", "/api/v2/audit-events?per_page=500"} {
		for _, caller := range []string{"admin-all", "acme-all"} {
			r := a.get(path, demoToken(t, caller))
			if r.status != 200 {
				t.Fatalf("%s: %d %s", path, r.status, r.raw)
			}
			a.noSecrets(t, path, r.raw)
		}
	}
	var changes []string
	if err := a.db.NewRaw("SELECT changes::text FROM audit_events").Scan(context.Background(), &changes); err != nil || len(changes) == 0 {
		t.Fatalf("audit rows: %v", err)
	}
	a.noSecrets(t, "the audit table", []byte(strings.Join(changes, "\n")))
	// The wire fields are exactly docs/design.md §9's.
	r := a.get("/api/v2/tokens?name=ci", tok)
	items, _ := r.body["data"].([]any)
	if len(items) != 1 {
		t.Fatalf("GET /tokens?name=ci: %s", r.raw)
	}
	var keys []string
	for k := range items[0].(map[string]any) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"account_id", "created_at", "expires_at", "id", "last_used_at", "name", "parent_token_id", "permissions", "rate_limit", "revoked_at"}
	if !slices.Equal(keys, want) || items[0].(map[string]any)["revoked_at"] == nil {
		t.Fatalf("fields %v, want %v: %s", keys, want, r.raw)
	}
}

// TestTokenListScoped: GET /tokens shows exactly the tokens whose account
// is in the caller's management scope, for a caller of every account type,
// with its filters, search and sorts.
func TestTokenListScoped(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	scopes := map[string][]string{
		"admin-all":      nil, // every account
		"fleetco-all":    {"fleetco", "acme", "globex", "umbrella", "hooli", "soylent", "acme-night", "globex-day"},
		"northwind-all":  {"northwind", "tailspin", "contoso"},
		"acme-all":       {"acme", "acme-night"},
		"acme-night-all": {"acme-night"},
		"globex-read":    {"globex", "globex-day"},
	}
	for caller, accounts := range scopes {
		t.Run(caller, func(t *testing.T) {
			var want []int64
			q := a.db.NewSelect().Table("tokens").Column("tokens.id").Join("JOIN accounts a ON a.id = tokens.account_id").Order("tokens.id")
			if accounts != nil {
				q = q.Where("a.username IN (?)", bun.List(accounts))
			}
			if err := q.Scan(ctx, &want); err != nil {
				t.Fatal(err)
			}
			r := a.get("/api/v2/tokens?per_page=500", demoToken(t, caller))
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.raw)
			}
			var got []int64
			for _, it := range r.body["data"].([]any) {
				got = append(got, int64(it.(map[string]any)["id"].(float64)))
			}
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("ids %v, want %v", got, want)
			}
		})
	}
	tok := demoToken(t, "acme-all")
	acme := a.accountID(t, "acme")
	for _, c := range []struct {
		query string
		want  []string
	}{
		{fmt.Sprintf("account_id=%d&sort=name", acme), []string{"acme-all", "acme-expired", "acme-ratelimited", "acme-services-only"}},
		{"name=acme-night-all", []string{"acme-night-all"}},
		{"search=SERVICES", []string{"acme-services-only"}},
		{"sort=name&order=desc&per_page=2", []string{"acme-services-only", "acme-ratelimited"}},
		{"sort=created_at&account_id=999999", nil},
	} {
		r := a.get("/api/v2/tokens?"+c.query, tok)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", c.query, r.status, r.raw)
		}
		var got []string
		for _, it := range r.body["data"].([]any) {
			got = append(got, it.(map[string]any)["name"].(string))
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s: %v, want %v", c.query, got, c.want)
		}
	}
	for _, q := range []string{"sort=hash", "hash=00", "secret=x", "sort=permissions", "account_id=x", "bogus=1"} {
		denial(t, a.get("/api/v2/tokens?"+q, tok), 400, "INVALID_PARAMETER", "")
	}
	denial(t, a.get("/api/v2/tokens", demoToken(t, "acme-services-only")), 403, "TOKEN_PERMISSION_DENIED", "")
}

// TestTokenRevoke: DELETE /tokens/{id} through one server makes the token
// fail on the very next request on another server over the same database;
// it answers 204 again for a revoked token, a token may revoke itself with
// the permission and write access, a token outside the scope is 404, and
// each revoke leaves an audit row.
func TestTokenRevoke(t *testing.T) {
	a := newTestAPI(t)
	b := newReplica(t, a, nil, 0)
	ids := map[string]int64{}
	for _, n := range []string{"acme-services-only", "acme-night-all", "globex-read", "tailspin-all"} {
		var id int64
		if err := a.db.NewRaw("SELECT id FROM tokens WHERE name = ?", n).Scan(context.Background(), &id); err != nil {
			t.Fatal(err)
		}
		ids[n] = id
	}
	victim := demoToken(t, "acme-services-only")
	if r := b.get("/api/v2/services", victim); r.status != 200 {
		t.Fatalf("before: %d %s", r.status, r.raw)
	}
	audits := a.auditCount(t)
	r := a.send("DELETE", fmt.Sprintf("/api/v2/tokens/%d", ids["acme-services-only"]), demoToken(t, "acme-all"), "")
	if r.status != 204 || len(r.raw) != 0 {
		t.Fatalf("revoke: %d %s", r.status, r.raw)
	}
	denial(t, b.get("/api/v2/services", victim), 401, "INVALID_TOKEN", "")
	denial(t, a.get("/api/v2/me", victim), 401, "INVALID_TOKEN", "")
	if a.auditCount(t) != audits+1 {
		t.Fatal("no audit row")
	}
	var ev audit.Event
	if err := a.db.NewSelect().Model(&ev).Order("id DESC").Limit(1).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev.Action != "token.revoke" || ev.TargetID != ids["acme-services-only"] || ev.TargetAccountID != a.accountID(t, "acme") || ev.Changes["revoked_at"].After == nil {
		t.Fatalf("audit %+v", ev)
	}
	// Again: 204, the first revocation time kept.
	var first time.Time
	_ = a.db.NewRaw("SELECT revoked_at FROM tokens WHERE id = ?", ids["acme-services-only"]).Scan(context.Background(), &first)
	if r := b.send("DELETE", fmt.Sprintf("/api/v2/tokens/%d", ids["acme-services-only"]), demoToken(t, "acme-all"), ""); r.status != 204 {
		t.Fatalf("revoke again: %d %s", r.status, r.raw)
	}
	var again time.Time
	_ = a.db.NewRaw("SELECT revoked_at FROM tokens WHERE id = ?", ids["acme-services-only"]).Scan(context.Background(), &again)
	if !again.Equal(first) {
		t.Fatalf("revoked_at moved from %s to %s", first, again)
	}
	// Still listed, with revoked_at.
	list := a.get("/api/v2/tokens?name=acme-services-only", demoToken(t, "acme-all"))
	if items, _ := list.body["data"].([]any); len(items) != 1 || items[0].(map[string]any)["revoked_at"] == nil {
		t.Fatalf("revoked token listed: %s", list.raw)
	}

	// Outside the scope, or missing: 404, and nothing changes.
	for _, c := range []struct {
		caller string
		id     int64
	}{{"acme-all", ids["globex-read"]}, {"acme-all", ids["tailspin-all"]}, {"northwind-all", ids["acme-night-all"]},
		{"acme-night-all", ids["globex-read"]}, {"acme-all", 999999}} {
		audits := a.auditCount(t)
		denial(t, a.send("DELETE", fmt.Sprintf("/api/v2/tokens/%d", c.id), demoToken(t, c.caller), ""), 404, "NOT_FOUND", "")
		if a.auditCount(t) != audits {
			t.Fatal("a refused revoke wrote an audit row")
		}
	}
	if r := b.get("/api/v2/me", demoToken(t, "globex-read")); r.status != 200 {
		t.Fatalf("globex-read after a refused revoke: %d", r.status)
	}
	// The route decision: permission and write access.
	denial(t, a.send("DELETE", fmt.Sprintf("/api/v2/tokens/%d", ids["globex-read"]), demoToken(t, "globex-read"), ""), 403, "TOKEN_PERMISSION_DENIED", "")
	umbrella := a.mintToken(t, "umbrella", "umbrella-second", []string{"*"}, nil, 0)
	var umbrellaID int64
	_ = a.db.NewRaw("SELECT id FROM tokens WHERE name = 'umbrella-second'").Scan(context.Background(), &umbrellaID)
	denial(t, a.send("DELETE", fmt.Sprintf("/api/v2/tokens/%d", umbrellaID), umbrella, ""), 403, "READ_ONLY_ACCOUNT", "")
	// A body or a bad id: 400.
	denial(t, a.send("DELETE", fmt.Sprintf("/api/v2/tokens/%d", ids["acme-night-all"]), demoToken(t, "acme-all"), `{}`), 400, "INVALID_BODY", "")
	denial(t, a.send("DELETE", "/api/v2/tokens/0", demoToken(t, "acme-all"), ""), 400, "INVALID_PARAMETER", "")
	denial(t, a.send("DELETE", "/api/v2/tokens/x", demoToken(t, "acme-all"), ""), 400, "INVALID_PARAMETER", "")

	// A token revokes itself; the next request on the other server fails.
	self := a.mintToken(t, "acme", "self", []string{"DELETE /tokens/{id}", "GET /me"}, nil, 0)
	var selfID int64
	_ = a.db.NewRaw("SELECT id FROM tokens WHERE name = 'self'").Scan(context.Background(), &selfID)
	if r := a.send("DELETE", fmt.Sprintf("/api/v2/tokens/%d", selfID), self, ""); r.status != 204 {
		t.Fatalf("self revoke: %d %s", r.status, r.raw)
	}
	denial(t, b.get("/api/v2/me", self), 401, "INVALID_TOKEN", "")
}
