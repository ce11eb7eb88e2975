package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func (a *testAPI) post(body, token string, headers ...string) response {
	a.t.Helper()
	h := append([]string{"Authorization", "Bearer " + token, "Content-Type", "application/json"}, headers...)
	return a.do(http.MethodPost, "/api/v2/passengers", strings.NewReader(body), h...)
}

func (a *testAPI) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := a.db.NewRaw(query, args...).Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPassengerCreate(t *testing.T) {
	a := newTestAPI(t)
	res := a.post(`{"passenger_name":"  Zoe Park ","passenger_assign_id":"ab-7","passenger_email":"zoe@example.com","passenger_pickup_point_id":3}`, demoToken(t, "acme-all"))
	if res.status != http.StatusCreated {
		t.Fatalf("status %d: %s", res.status, res.raw)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	d := res.data(t)
	if d["passenger_name"] != "Zoe Park" || d["passenger_assign_id"] != "AB-7" || d["passenger_active"] != true || d["passenger_pickup_point_id"] != 3.0 {
		t.Fatalf("created %v", d)
	}
	if id, _ := d["passenger_id"].(float64); id < 1 {
		t.Fatalf("passenger_id %v", d["passenger_id"])
	}
	for _, f := range []string{"passenger_idn", "passenger_address", "passenger_phone", "passenger_desc", "passenger_client_id"} {
		if d[f] != "" {
			t.Errorf("%s = %v, want empty", f, d[f])
		}
	}
	t.Run("subaccount creates for its parent", func(t *testing.T) {
		res := a.post(`{"passenger_name":"Night rider"}`, demoToken(t, "acme-night-all"))
		if res.status != http.StatusCreated {
			t.Fatalf("status %d: %s", res.status, res.raw)
		}
		if n := a.count(t, `SELECT count(*) FROM passengers p JOIN accounts a ON a.id = p.account_id WHERE a.username = 'acme' AND p.passenger_name = 'Night rider'`); n != 1 {
			t.Fatalf("%d rows owned by acme", n)
		}
	})
	t.Run("conflict", func(t *testing.T) {
		before := a.count(t, `SELECT count(*) FROM passengers`)
		res := a.post(`{"passenger_name":"Other","passenger_assign_id":"AB-7"}`, demoToken(t, "acme-all"))
		if res.status != http.StatusConflict || res.errorCode(t) != "CONFLICT" {
			t.Fatalf("status %d: %s", res.status, res.raw)
		}
		if after := a.count(t, `SELECT count(*) FROM passengers`); after != before {
			t.Fatalf("rows %d → %d", before, after)
		}
		// The same assign id in another account is fine.
		if res := a.post(`{"passenger_name":"Other","passenger_assign_id":"ab-7"}`, demoToken(t, "tailspin-all")); res.status != http.StatusCreated {
			t.Fatalf("other account: %d %s", res.status, res.raw)
		}
	})
}

func TestPassengerErrors(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name, body, code string
		field            string
	}{
		{"missing name", `{}`, "VALIDATION_FAILED", "passenger_name"},
		{"blank name", `{"passenger_name":"   "}`, "VALIDATION_FAILED", "passenger_name"},
		{"name 101", `{"passenger_name":"` + long(101) + `"}`, "VALIDATION_FAILED", "passenger_name"},
		{"assign id 51", `{"passenger_name":"a","passenger_assign_id":"` + long(51) + `"}`, "VALIDATION_FAILED", "passenger_assign_id"},
		{"bad email", `{"passenger_name":"a","passenger_email":"not-an-address"}`, "VALIDATION_FAILED", "passenger_email"},
		{"desc 1001", `{"passenger_name":"a","passenger_desc":"` + long(1001) + `"}`, "VALIDATION_FAILED", "passenger_desc"},
		{"pickup 0", `{"passenger_name":"a","passenger_pickup_point_id":0}`, "VALIDATION_FAILED", "passenger_pickup_point_id"},
		{"NUL", `{"passenger_name":"a\u0000b"}`, "VALIDATION_FAILED", "passenger_name"},
		{"not JSON", `{"passenger_name":`, "INVALID_BODY", ""},
		{"array", `[{"passenger_name":"a"}]`, "INVALID_BODY", ""},
		{"null", `null`, "INVALID_BODY", ""},
		{"empty", ``, "INVALID_BODY", ""},
		{"unknown field", `{"passenger_name":"a","passenger_age":3}`, "INVALID_BODY", "passenger_age"},
		{"wrong type", `{"passenger_name":7}`, "INVALID_BODY", "passenger_name"},
		{"wrong type bool", `{"passenger_name":"a","passenger_active":"yes"}`, "INVALID_BODY", "passenger_active"},
		{"fractional id", `{"passenger_name":"a","passenger_pickup_point_id":1.5}`, "INVALID_BODY", "passenger_pickup_point_id"},
		{"trailing data", `{"passenger_name":"a"} {}`, "INVALID_BODY", ""},
	}
	before := a.count(t, `SELECT count(*) FROM passengers`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := a.post(tt.body, tok)
			if res.status != http.StatusBadRequest || res.errorCode(t) != tt.code {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
			details, _ := res.body["error"].(map[string]any)["details"].(map[string]any)
			switch {
			case tt.code == "VALIDATION_FAILED":
				if fields, _ := details["fields"].(map[string]any); fields[tt.field] == nil {
					t.Fatalf("no reason for %s: %v", tt.field, details)
				}
			case tt.field != "":
				if details["field"] != tt.field {
					t.Fatalf("details %v, want field %s", details, tt.field)
				}
			}
		})
	}
	t.Run("media type and size", func(t *testing.T) {
		res := a.do(http.MethodPost, "/api/v2/passengers", strings.NewReader(`{"passenger_name":"a"}`), "Authorization", tok, "Content-Type", "text/plain")
		if res.status != http.StatusUnsupportedMediaType || res.errorCode(t) != "UNSUPPORTED_MEDIA_TYPE" {
			t.Fatalf("text/plain: %d %s", res.status, res.raw)
		}
		res = a.do(http.MethodPost, "/api/v2/passengers", strings.NewReader(`{"passenger_name":"a"}`), "Authorization", tok)
		if res.status != http.StatusUnsupportedMediaType {
			t.Fatalf("no content type: %d %s", res.status, res.raw)
		}
		if res := a.post(`{"passenger_name":"a"}`, tok, "Content-Type", "application/json; charset=utf-8"); res.status != http.StatusCreated {
			// Header.Add appends: the first Content-Type wins, which is plain application/json.
			t.Fatalf("json with charset: %d %s", res.status, res.raw)
		}
		big := `{"passenger_name":"a","passenger_desc":"` + long(70<<10) + `"}`
		res = a.post(big, tok)
		if res.status != http.StatusRequestEntityTooLarge || res.errorCode(t) != "PAYLOAD_TOO_LARGE" {
			t.Fatalf("70 KiB: %d %s", res.status, res.raw)
		}
	})
	if after := a.count(t, `SELECT count(*) FROM passengers`); after != before+1 {
		t.Fatalf("failed requests wrote rows: %d → %d", before, after)
	}
}

func TestPassengerForbidden(t *testing.T) {
	a := newTestAPI(t)
	tests := []struct{ token, code string }{
		{"umbrella-all", "READ_ONLY_ACCOUNT"},
		{"globex-read", "TOKEN_PERMISSION_DENIED"},
		{"acme-services-only", "TOKEN_PERMISSION_DENIED"},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			// Checked before the body: even a broken body gets the 403.
			res := a.post(`{broken`, demoToken(t, tt.token))
			if res.status != http.StatusForbidden || res.errorCode(t) != tt.code {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
		})
	}
}

func TestPassengerIdempotency(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	body := `{"passenger_name":"Idem Potent","passenger_assign_id":"IDEM-1"}`
	first := a.post(body, tok, "Idempotency-Key", "key-1")
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	id := first.data(t)["passenger_id"]
	// Whitespace and key order do not make another body.
	again := a.post(`{ "passenger_assign_id":"IDEM-1", "passenger_name":"Idem Potent" }`, tok, "Idempotency-Key", "key-1")
	if again.status != http.StatusCreated || again.data(t)["passenger_id"] != id || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s", again.status, again.raw)
	}
	other := a.post(`{"passenger_name":"Someone else"}`, tok, "Idempotency-Key", "key-1")
	if other.status != http.StatusConflict || other.errorCode(t) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("reuse: %d %s", other.status, other.raw)
	}
	if n := a.count(t, `SELECT count(*) FROM passengers WHERE passenger_assign_id = 'IDEM-1'`); n != 1 {
		t.Fatalf("%d rows", n)
	}
	for _, bad := range []string{"", strings.Repeat("k", 256), "has space"} {
		res := a.post(body, tok, "Idempotency-Key", bad)
		if res.status != http.StatusBadRequest || res.errorCode(t) != "INVALID_PARAMETER" {
			t.Errorf("key %q: %d %s", bad, res.status, res.raw)
		}
	}

	t.Run("concurrent retries create one row", func(t *testing.T) {
		const n = 16
		var wg sync.WaitGroup
		ids := make([]any, n)
		statuses := make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := a.post(`{"passenger_name":"Race","passenger_assign_id":"RACE-1"}`, tok, "Idempotency-Key", "race")
				statuses[i] = res.status
				if d, ok := res.body["data"].(map[string]any); ok {
					ids[i] = d["passenger_id"]
				}
			}()
		}
		wg.Wait()
		for i := range n {
			if statuses[i] != http.StatusCreated || ids[i] != ids[0] {
				t.Fatalf("request %d: status %d id %v (first id %v)", i, statuses[i], ids[i], ids[0])
			}
		}
		if c := a.count(t, `SELECT count(*) FROM passengers WHERE passenger_assign_id = 'RACE-1'`); c != 1 {
			t.Fatalf("%d rows", c)
		}
	})
	_ = fmt.Sprint
}
