package api_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConflictFieldsDocumented (issue 34): every field a create answers
// 409 CONFLICT for is named in docs/api.md's error table (the CONFLICT row
// of cmd/fleetapi/apiguide.md), which named passenger_assign_id only. Each
// create of the document that can answer 409 is made twice through the
// real router; a create added without a case here fails the test.
func TestConflictFieldsDocumented(t *testing.T) {
	a := newTestAPI(t)
	acme := a.accountID(t, "acme")
	creates := map[string]string{
		"POST /passengers": `{"passenger_name":"Twice","passenger_assign_id":"TWICE-1"}`,
		"POST /accounts":   fmt.Sprintf(`{"username":"twice-sub","type":"subaccount","manager_id":%d}`, acme),
		"POST /objects":    fmt.Sprintf(`{"imei":"TWICE-1","account_id":%d}`, acme),
		"POST /tokens":     `{"name":"twice","permissions":["GET /me"]}`,
		"POST /events":     `{"type":"overspeed","name":"Twice","checked_value":"100"}`,
		"POST /services":   `{"imei":"` + acmeVan + `","name":"Twice"}`,
		"POST /reports":    `{"name":"Twice"}`,
	}
	// The creates whose one 409 is the reuse of an Idempotency-Key (a
	// webhook has no unique field: two of the same url are two webhooks):
	// made twice with the same key and another body, they must answer 409
	// IDEMPOTENCY_KEY_REUSED, which docs/api.md's error table names.
	reused := map[string][2]string{
		"POST /webhooks": {`{"url":"https://hooks.acme.example/twice"}`, `{"url":"https://hooks.acme.example/twice-2"}`},
		// a zone has no unique field either (two of one name are two zones)
		"POST /zones": {`{"name":"twice","kind":"circle","center":{"lat":1,"lon":2},"radius_m":10}`,
			`{"name":"twice","kind":"circle","center":{"lat":1,"lon":2},"radius_m":11}`},
	}
	guide, err := os.ReadFile(filepath.Join("..", "cmd", "fleetapi", "apiguide.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| 409 \\| `CONFLICT` \\|([^|]*)\\|").FindSubmatch(guide)
	if row == nil {
		t.Fatal("apiguide.md has no CONFLICT row")
	}
	doc := loadOpenAPI(t, openAPIDoc(t))
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if method != http.MethodPost || op.Responses.Value("409") == nil || op.RequestBody == nil {
				continue // a POST without a body is an action on a row (api/guard.go bodylessPosts), not a create
			}
			name := method + " " + path
			if bodies, ok := reused[name]; ok {
				delete(reused, name)
				tok := demoToken(t, "acme-all")
				// a key of its own per route: the keys are the account's,
				// whatever the route
				key := "twice-" + strings.ReplaceAll(name, " ", "-")
				if first := a.send(method, "/api/v2"+path, tok, bodies[0], "Idempotency-Key", key); first.status != http.StatusCreated {
					t.Fatalf("%s: the first create: %d %s", name, first.status, first.raw)
				}
				res := a.send(method, "/api/v2"+path, tok, bodies[1], "Idempotency-Key", key)
				if res.status != http.StatusConflict || res.errorCode(t) != "IDEMPOTENCY_KEY_REUSED" {
					t.Fatalf("%s twice with one Idempotency-Key: %d %s, want 409 IDEMPOTENCY_KEY_REUSED", name, res.status, res.raw)
				}
				if !regexp.MustCompile("(?m)^\\| 409 \\| `IDEMPOTENCY_KEY_REUSED` \\|").Match(guide) {
					t.Errorf("%s answers 409 IDEMPOTENCY_KEY_REUSED, which docs/api.md's error table has no row for", name)
				}
				continue
			}
			body, ok := creates[name]
			if !ok {
				t.Errorf("%s can answer 409: add a create made twice to this test", name)
				continue
			}
			delete(creates, name)
			tok := demoToken(t, "acme-all")
			if first := a.send(method, "/api/v2"+path, tok, body); first.status != http.StatusCreated {
				t.Fatalf("%s: the first create: %d %s", name, first.status, first.raw)
			}
			res := a.send(method, "/api/v2"+path, tok, body)
			if res.status != http.StatusConflict || res.errorCode(t) != "CONFLICT" {
				t.Fatalf("%s twice: %d %s, want 409 CONFLICT", name, res.status, res.raw)
			}
			field, _ := res.body["error"].(map[string]any)["details"].(map[string]any)["field"].(string)
			if field == "" || !strings.Contains(string(row[1]), "`"+field+"`") {
				t.Errorf("%s answers 409 CONFLICT for the field %q, which docs/api.md's CONFLICT row does not name", name, field)
			}
		}
	}
	for name := range creates {
		t.Errorf("%s is not a create of the document that answers 409", name)
	}
	for name := range reused {
		t.Errorf("%s is not a create of the document that answers 409", name)
	}
}
