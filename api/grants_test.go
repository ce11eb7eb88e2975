package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/uptrace/bun/dialect/pgdialect"
)

// lastAudit returns the newest audit row as a JSON object.
func (a *testAPI) lastAudit(t *testing.T) map[string]any {
	t.Helper()
	var raw string
	if err := a.db.NewRaw(`SELECT row_to_json(ae)::text FROM audit_events ae ORDER BY id DESC LIMIT 1`).Scan(context.Background(), &raw); err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// grantsOf returns the devices granted to the subaccount, sorted.
func (a *testAPI) grantsOf(t *testing.T, id int64) []string {
	t.Helper()
	out := []string{}
	if err := a.db.NewRaw("SELECT imei FROM object_grants WHERE subaccount_id = ? ORDER BY imei", id).Scan(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// imeisOf returns the imei of each item of a list response, sorted.
func imeisOf(t *testing.T, r response) []string {
	t.Helper()
	items, ok := r.body["data"].([]any)
	if !ok {
		t.Fatalf("no list: %s", r.raw)
	}
	out := []string{}
	for _, it := range items {
		out = append(out, it.(map[string]any)["imei"].(string))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// withoutRequestID blanks the request id of an error body.
func withoutRequestID(r response) []byte {
	id := r.header.Get("X-Request-Id")
	if id == "" {
		return r.raw
	}
	return bytes.ReplaceAll(r.raw, []byte(id), []byte("REQUEST-ID"))
}

// TestGrantsRules runs PUT and GET /accounts/{id}/objects over every rule
// of docs/design.md §9: devices only of the parent (an unknown and a foreign device
// give byte-identical answers), own_account, grants on a non-subaccount,
// other tenants' and missing ids, read-only callers, missing permissions
// and malformed bodies; a refused write stores no grant and no audit row.
func TestGrantsRules(t *testing.T) {
	a := newTestAPI(t)
	night := a.accountID(t, "acme-night")
	day := a.accountID(t, "globex-day")
	path := func(id int64) string { return fmt.Sprintf("/api/v2/accounts/%d/objects", id) }
	put := func(token string, id int64, body string) response {
		return a.send("PUT", path(id), demoToken(t, token), body)
	}
	initial := a.grantsOf(t, night)

	// device_not_owned: an unknown device, another tenant's device, a
	// device of another user of the same manager, and a mix with an owned
	// one; by the user and by its manager. Unknown and foreign are the
	// same answer, apart from the imei the caller sent and the request id.
	for _, token := range []string{"acme-all", "fleetco-all", "admin-all"} {
		for _, m := range []string{"no-such-device", "861073032104551", "865231041152302", "352091087600121"} {
			denial(t, put(token, night, `{"imei":["`+m+`"]}`), 403, "MANAGEMENT_DENIED", "device_not_owned")
			denial(t, put(token, night, `{"imei":["356938035643817","`+m+`"]}`), 403, "MANAGEMENT_DENIED", "device_not_owned")
		}
	}
	unknown := put("acme-all", night, `{"imei":["000000000000000"]}`)
	foreign := put("acme-all", night, `{"imei":["861073032104551"]}`)
	u := bytes.ReplaceAll(withoutRequestID(unknown), []byte("000000000000000"), []byte("IMEI"))
	f := bytes.ReplaceAll(withoutRequestID(foreign), []byte("861073032104551"), []byte("IMEI"))
	if unknown.status != foreign.status || !bytes.Equal(u, f) {
		t.Fatalf("unknown and foreign devices answer differently:\n%d %s\n%d %s", unknown.status, u, foreign.status, f)
	}
	// own_account: a subaccount cannot grant itself, not even its parent's devices or none.
	for _, body := range []string{`{"imei":["356938035643817"]}`, `{"imei":[]}`, `{"imei":["356938035643809"]}`} {
		denial(t, put("acme-night-all", night, body), 403, "MANAGEMENT_DENIED", "own_account")
		denial(t, put("globex-day-all", day, body), 403, "MANAGEMENT_DENIED", "own_account")
	}
	// Grants are for subaccounts: any other type is 400 INVALID_PARAMETER
	// naming the path parameter id (no body field), read or write; the
	// docs say so (docs/management.md, issue 19 item 23).
	for _, c := range []struct{ token, target string }{{"acme-all", "acme"}, {"fleetco-all", "fleetco"}, {"fleetco-all", "globex"}, {"admin-all", "admin"}, {"admin-all", "northwind"}} {
		for _, r := range []response{put(c.token, a.accountID(t, c.target), `{"imei":[]}`), a.get(path(a.accountID(t, c.target)), demoToken(t, c.token))} {
			denial(t, r, 400, "INVALID_PARAMETER", "")
			if d := r.body["error"].(map[string]any)["details"].(map[string]any); d["parameter"] != "id" || !strings.Contains(d["reason"].(string), "subaccounts only") {
				t.Fatalf("details %v, want the path parameter id", d)
			}
		}
	}
	// Outside the management scope, or missing: 404, read or write.
	for _, c := range []struct {
		token string
		id    int64
	}{
		{"acme-all", day}, {"northwind-all", night}, {"tailspin-all", night}, {"globex-day-all", night},
		{"acme-night-all", day}, {"acme-all", 999999999}, {"admin-all", 999999999},
	} {
		denial(t, put(c.token, c.id, `{"imei":[]}`), 404, "NOT_FOUND", "")
		denial(t, a.get(path(c.id), demoToken(t, c.token)), 404, "NOT_FOUND", "")
	}
	// The route decision: read-only callers, tokens without the permission, suspended accounts.
	denial(t, put("umbrella-all", night, `{"imei":[]}`), 403, "READ_ONLY_ACCOUNT", "")
	denial(t, put("globex-read", day, `{"imei":[]}`), 403, "TOKEN_PERMISSION_DENIED", "")
	denial(t, put("acme-services-only", night, `{"imei":[]}`), 403, "TOKEN_PERMISSION_DENIED", "")
	denial(t, a.get(path(night), demoToken(t, "acme-services-only")), 403, "TOKEN_PERMISSION_DENIED", "")
	denial(t, put("hooli-all", night, `{"imei":[]}`), 401, "ACCOUNT_INACTIVE", "")
	// Malformed bodies and paths.
	for _, c := range []struct{ name, body, code string }{
		{"not json", `{"imei":`, "INVALID_BODY"},
		{"array", `["356938035643817"]`, "INVALID_BODY"},
		{"unknown field", `{"imei":[],"subaccount_id":1}`, "INVALID_BODY"},
		{"case-folded key", `{"IMEI":[]}`, "INVALID_BODY"},
		{"duplicate key", `{"imei":[],"imei":[]}`, "INVALID_BODY"},
		{"string", `{"imei":"356938035643817"}`, "INVALID_BODY"},
		{"number item", `{"imei":[356938035643817]}`, "INVALID_BODY"},
		{"missing", `{}`, "VALIDATION_FAILED"},
		{"null", `{"imei":null}`, "INVALID_BODY"}, // a list is never null
		{"duplicates", `{"imei":["356938035643817","356938035643817"]}`, "VALIDATION_FAILED"},
		{"empty imei", `{"imei":[""]}`, "VALIDATION_FAILED"},
		{"long imei", `{"imei":["` + strings.Repeat("1", 51) + `"]}`, "VALIDATION_FAILED"},
		{"bad characters", `{"imei":["3569 38035643817"]}`, "VALIDATION_FAILED"},
		{"underscore", `{"imei":["356_938"]}`, "VALIDATION_FAILED"},
		{"NUL", `{"imei":["35\u0000"]}`, "VALIDATION_FAILED"},
		{"too many", `{"imei":["` + strings.Repeat(`a","`, 1000) + `b"]}`, "VALIDATION_FAILED"},
	} {
		t.Run(c.name, func(t *testing.T) { denial(t, put("acme-all", night, c.body), 400, c.code, "") })
	}
	denial(t, a.send("PUT", path(night)+"?x=1", demoToken(t, "acme-all"), `{"imei":[]}`), 400, "INVALID_PARAMETER", "")
	denial(t, a.send("PUT", "/api/v2/accounts/0/objects", demoToken(t, "acme-all"), `{"imei":[]}`), 400, "INVALID_PARAMETER", "")
	if n := a.auditCount(t); n != 0 {
		t.Fatalf("%d audit rows after refused writes", n)
	}
	if got := a.grantsOf(t, night); !slices.Equal(got, initial) {
		t.Fatalf("grants changed by refused writes: %v, want %v", got, initial)
	}

	// A subaccount reads its own grants; its user and manager read them too.
	for _, token := range []string{"acme-night-all", "acme-all", "fleetco-all", "admin-all"} {
		if r := a.get(path(night), demoToken(t, token)); r.status != 200 || !slices.Equal(imeisOf(t, r), initial) {
			t.Fatalf("%s: GET grants %d %s", token, r.status, r.raw)
		}
	}

	// The user replaces the grants: 200 with the granted devices, one
	// audit row with the lists before and after, and the subaccount sees
	// exactly the new devices on its next request.
	tok := demoToken(t, "acme-all")
	for i, want := range [][]string{{"356938035643817", "356938035643825"}, {}, {"356938035643809"}, {"356938035643825", "356938035643809", "356938035643817"}} {
		before := a.grantsOf(t, night)
		body, _ := json.Marshal(map[string]any{"imei": want})
		r := a.send("PUT", path(night), tok, string(body))
		if r.status != 200 {
			t.Fatalf("PUT %s: %d %s", body, r.status, r.raw)
		}
		sorted := slices.Sorted(slices.Values(want))
		if sorted == nil {
			sorted = []string{}
		}
		if got := imeisOf(t, r); !slices.Equal(got, sorted) {
			t.Fatalf("PUT answered %v, want %v", got, sorted)
		}
		if got := a.grantsOf(t, night); !slices.Equal(got, sorted) {
			t.Fatalf("stored grants %v, want %v", got, sorted)
		}
		if n := a.auditCount(t); n != i+1 {
			t.Fatalf("%d audit rows, want %d", n, i+1)
		}
		ev := a.lastAudit(t)
		wantChanges := map[string]any{"imei": map[string]any{"before": before, "after": sorted}}
		if slices.Equal(before, sorted) {
			wantChanges = map[string]any{}
		}
		gotC, _ := json.Marshal(ev["changes"])
		wantC, _ := json.Marshal(wantChanges)
		if ev["action"] != "grants.replace" || ev["target_account_id"] != float64(night) || ev["target_id"] != float64(night) ||
			ev["actor_account_id"] != float64(a.accountID(t, "acme")) || ev["request_id"] != r.header.Get("X-Request-Id") || string(gotC) != string(wantC) {
			t.Fatalf("audit row %v, want changes %s", ev, wantC)
		}
		nightTok := demoToken(t, "acme-night-all")
		if objs := a.get("/api/v2/objects?per_page=500", nightTok); objs.status != 200 || !slices.Equal(imeisOf(t, objs), sorted) {
			t.Fatalf("GET /objects as the subaccount after %v: %d %s", sorted, objs.status, objs.raw)
		}
		own := a.get(path(night)+"?per_page=500", nightTok)
		if own.status != 200 || !slices.Equal(imeisOf(t, own), sorted) {
			t.Fatalf("GET own grants after %v: %s", sorted, own.raw)
		}
		services := a.get("/api/v2/services?per_page=500", nightTok)
		wantServices := []string{}
		if err := a.db.NewRaw("SELECT DISTINCT imei FROM services WHERE imei = ANY(?) ORDER BY imei", pgdialect.Array(sorted)).Scan(context.Background(), &wantServices); err != nil {
			t.Fatal(err)
		}
		if len(sorted) > 0 && len(wantServices) == 0 {
			t.Fatalf("no demo service on %v: the check would be empty", sorted)
		}
		if services.status != 200 || !slices.Equal(imeisOf(t, services), wantServices) {
			t.Fatalf("GET /services as the subaccount after %v: %v, want %v", sorted, imeisOf(t, services), wantServices)
		}
	}
	// The same list again is a write with no change ({}), like a PATCH.
	if r := a.send("PUT", path(night), tok, `{"imei":["356938035643809","356938035643817","356938035643825"]}`); r.status != 200 {
		t.Fatalf("same grants: %d %s", r.status, r.raw)
	}
	if c, _ := json.Marshal(a.lastAudit(t)["changes"]); string(c) != `{}` {
		t.Fatalf("changes of an unchanged PUT: %s", c)
	}
	// The list is paged and filtered like GET /objects.
	r := a.get(path(night)+"?per_page=1&page=2&sort=imei&order=desc", tok)
	if m, _ := r.body["meta"].(map[string]any); r.status != 200 || m["total"] != float64(3) || !slices.Equal(imeisOf(t, r), []string{"356938035643817"}) {
		t.Fatalf("paged grants: %s", r.raw)
	}
	denial(t, a.get(path(night)+"?sort=odometer", tok), 400, "INVALID_PARAMETER", "")
	denial(t, a.get(path(night)+"?bogus=1", tok), 400, "INVALID_PARAMETER", "")
	if r := a.get(path(night)+"?name=Van%2012", tok); !slices.Equal(imeisOf(t, r), []string{"356938035643817"}) {
		t.Fatalf("filtered grants: %s", r.raw)
	}
}

// TestObjectCreate runs POST /objects over every rule: an account in
// scope (404 outside or missing), no device for a subaccount
// (wrong_target_type), a platform-wide unique imei (409), write access and
// the permission, malformed bodies, Idempotency-Key; the audit row is
// exact and a refused create stores nothing.
func TestObjectCreate(t *testing.T) {
	a := newTestAPI(t)
	acme := a.accountID(t, "acme")
	body := func(imei string, owner int64, extra string) string {
		return fmt.Sprintf(`{"imei":%q,"account_id":%d%s}`, imei, owner, extra)
	}
	objects := func() int {
		var n int
		if err := a.db.NewRaw("SELECT count(*) FROM objects").Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	count := objects()
	refused := []struct {
		name, token, body string
		status            int
		code, reason      string
	}{
		{"other tenant's user", "fleetco-all", body("dev-1", a.accountID(t, "tailspin"), ""), 404, "NOT_FOUND", ""},
		{"other manager", "fleetco-all", body("dev-1", a.accountID(t, "northwind"), ""), 404, "NOT_FOUND", ""},
		{"sibling user", "acme-all", body("dev-1", a.accountID(t, "globex"), ""), 404, "NOT_FOUND", ""},
		{"its manager", "acme-all", body("dev-1", a.accountID(t, "fleetco"), ""), 404, "NOT_FOUND", ""},
		{"subaccount's parent", "acme-night-all", body("dev-1", acme, ""), 404, "NOT_FOUND", ""},
		{"missing account", "admin-all", body("dev-1", 999999999, ""), 404, "NOT_FOUND", ""},
		{"for a subaccount by its user", "acme-all", body("dev-1", a.accountID(t, "acme-night"), ""), 403, "MANAGEMENT_DENIED", "wrong_target_type"},
		{"for a subaccount by the admin", "admin-all", body("dev-1", a.accountID(t, "globex-day"), ""), 403, "MANAGEMENT_DENIED", "wrong_target_type"},
		{"subaccount for itself", "acme-night-all", body("dev-1", a.accountID(t, "acme-night"), ""), 403, "MANAGEMENT_DENIED", "wrong_target_type"},
		{"duplicate imei, own", "acme-all", body("356938035643809", acme, ""), 409, "CONFLICT", ""},
		{"duplicate imei, foreign", "acme-all", body("865231041152302", acme, ""), 409, "CONFLICT", ""},
		{"read-only", "umbrella-all", body("dev-1", a.accountID(t, "umbrella"), ""), 403, "READ_ONLY_ACCOUNT", ""},
		{"no permission", "globex-read", body("dev-1", a.accountID(t, "globex"), ""), 403, "TOKEN_PERMISSION_DENIED", ""},
		{"services only", "acme-services-only", body("dev-1", acme, ""), 403, "TOKEN_PERMISSION_DENIED", ""},
		{"not json", "acme-all", `{"imei":`, 400, "INVALID_BODY", ""},
		{"unknown field", "acme-all", body("dev-1", acme, `,"id":5`), 400, "INVALID_BODY", ""},
		{"duplicate key", "acme-all", body("dev-1", acme, `,"imei":"dev-2"`), 400, "INVALID_BODY", ""},
		{"account_id string", "acme-all", `{"imei":"dev-1","account_id":"1"}`, 400, "INVALID_BODY", ""},
		{"odometer float", "acme-all", body("dev-1", acme, `,"odometer":1.5`), 400, "INVALID_BODY", ""},
		{"no imei", "acme-all", fmt.Sprintf(`{"account_id":%d}`, acme), 400, "VALIDATION_FAILED", ""},
		{"no account", "acme-all", `{"imei":"dev-1"}`, 400, "VALIDATION_FAILED", ""},
		{"zero account", "acme-all", body("dev-1", 0, ""), 400, "VALIDATION_FAILED", ""},
		{"bad imei", "acme-all", body("dev 1", acme, ""), 400, "VALIDATION_FAILED", ""},
		{"empty imei", "acme-all", body("", acme, ""), 400, "VALIDATION_FAILED", ""},
		{"long imei", "acme-all", body(strings.Repeat("9", 51), acme, ""), 400, "VALIDATION_FAILED", ""},
		{"negative odometer", "acme-all", body("dev-1", acme, `,"odometer":-1`), 400, "VALIDATION_FAILED", ""},
		{"negative engine hours", "acme-all", body("dev-1", acme, `,"engine_hours":-1`), 400, "VALIDATION_FAILED", ""},
		{"long name", "acme-all", body("dev-1", acme, `,"name":"`+strings.Repeat("n", 101)+`"`), 400, "VALIDATION_FAILED", ""},
		{"NUL in name", "acme-all", body("dev-1", acme, `,"name":"a\u0000"`), 400, "VALIDATION_FAILED", ""},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			denial(t, a.send("POST", "/api/v2/objects", demoToken(t, c.token), c.body), c.status, c.code, c.reason)
		})
	}
	if n := a.auditCount(t); n != 0 || objects() != count {
		t.Fatalf("refused creates stored %d audit rows, %d devices", n, objects()-count)
	}

	// Created by the user for itself, by its manager and by the admin.
	tok := demoToken(t, "acme-all")
	for i, token := range []string{"acme-all", "fleetco-all", "admin-all"} {
		imei := fmt.Sprintf("NEW-%d", i)
		r := a.send("POST", "/api/v2/objects", demoToken(t, token), body(imei, acme, `,"name":"Crane 9","odometer":12,"engine_hours":3`))
		if r.status != 201 {
			t.Fatalf("%s: %d %s", token, r.status, r.raw)
		}
		d := r.data(t)
		if d["imei"] != imei || d["account_id"] != float64(acme) || d["name"] != "Crane 9" || d["odometer"] != float64(12) || d["engine_hours"] != float64(3) {
			t.Fatalf("created %v", d)
		}
		ev := a.lastAudit(t)
		c, _ := json.Marshal(ev["changes"])
		want := fmt.Sprintf(`{"account_id":{"after":%d,"before":null},"engine_hours":{"after":3,"before":null},"imei":{"after":%q,"before":null},"name":{"after":"Crane 9","before":null},"odometer":{"after":12,"before":null}}`, acme, imei)
		if ev["action"] != "object.create" || ev["target_account_id"] != float64(acme) || ev["target_id"] != d["id"] || string(c) != want {
			t.Fatalf("audit %v, changes %s, want %s", ev, c, want)
		}
		if objs := a.get("/api/v2/objects?imei="+imei, tok); len(imeisOf(t, objs)) != 1 {
			t.Fatalf("the owner does not see %s: %s", imei, objs.raw)
		}
	}
	if n := a.auditCount(t); n != 3 {
		t.Fatalf("%d audit rows, want 3", n)
	}
	// Defaults: no name, zero readings.
	if r := a.send("POST", "/api/v2/objects", tok, body("NEW-defaults", acme, `,"name":null`)); r.status != 201 ||
		r.data(t)["name"] != "" || r.data(t)["odometer"] != float64(0) || r.data(t)["engine_hours"] != float64(0) {
		t.Fatalf("defaults: %d %s", r.status, r.raw)
	}

	// Idempotency-Key: a replay returns the first device and stores nothing; another body is 409.
	first := a.send("POST", "/api/v2/objects", tok, body("NEW-idem", acme, ""), "Idempotency-Key", "obj-1")
	again := a.send("POST", "/api/v2/objects", tok, body("NEW-idem", acme, ""), "Idempotency-Key", "obj-1")
	if first.status != 201 || again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || again.data(t)["id"] != first.data(t)["id"] {
		t.Fatalf("replay: %d %d %s", first.status, again.status, again.raw)
	}
	denial(t, a.send("POST", "/api/v2/objects", tok, body("NEW-idem-2", acme, ""), "Idempotency-Key", "obj-1"), 409, "IDEMPOTENCY_KEY_REUSED", "")
	if n := a.auditCount(t); n != 5 {
		t.Fatalf("%d audit rows, want 5 (a replay stores none)", n)
	}
}
