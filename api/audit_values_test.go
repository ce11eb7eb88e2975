package api_test

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/tenancy"
)

// TestAuditAcceptsLookAlikeValues: values that only look like a digest or
// a token — a dash-less UUID as a username or a token name, a 40-hex device
// serial, an e-mail holding "flt_" — are created through the real API (201,
// audited as they are), never a 500 (issue 19 item 8). What is actually the
// secret of a stored token, or its stored hash, is refused 400
// VALIDATION_FAILED naming the field and never echoing the value, and
// leaves no row and no audit event.
func TestAuditAcceptsLookAlikeValues(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	acme := a.accountID(t, "acme")
	const uuid = "3f2504e04f8911d39a0c0305e82c3301"
	const serial = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"
	const fltEmail = "flt_0123456789abcdefghijABCDEFGHIJ@acme.example"
	created := []struct{ name, path, body string }{
		{"uuid username", "/api/v2/accounts", fmt.Sprintf(`{"username":%q,"email":%q,"type":"subaccount","manager_id":%d}`, uuid, fltEmail, acme)},
		{"uuid token name", "/api/v2/tokens", fmt.Sprintf(`{"name":%q,"permissions":["GET /me"]}`, uuid)},
		{"serial token name", "/api/v2/tokens", fmt.Sprintf(`{"name":%q,"permissions":["GET /me"]}`, serial)},
		{"serial device", "/api/v2/objects", fmt.Sprintf(`{"imei":%q,"name":%q,"account_id":%d}`, serial, serial, acme)},
		{"uuid device", "/api/v2/objects", fmt.Sprintf(`{"imei":%q,"name":%q,"account_id":%d}`, uuid, fltEmail, acme)},
	}
	for _, c := range created {
		before := a.auditCount(t)
		res := a.send(http.MethodPost, c.path, tok, c.body)
		if res.status != http.StatusCreated {
			t.Fatalf("%s: %d %s", c.name, res.status, res.raw)
		}
		if a.auditCount(t) != before+1 {
			t.Fatalf("%s: no audit row", c.name)
		}
	}
	sub := a.accountID(t, uuid)
	if res := a.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", sub), tok, `{"email":"flt_`+strings.Repeat("x", 32)+`@acme.example"}`); res.status != http.StatusOK {
		t.Fatalf("PATCH email with flt_: %d %s", res.status, res.raw)
	}

	secret := demoToken(t, "globex-read") // another tenant's live token
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	refused := []struct{ name, path, body, field string }{
		{"secret as token name", "/api/v2/tokens", fmt.Sprintf(`{"name":%q,"permissions":["GET /me"]}`, secret), "name"},
		{"secret in an email", "/api/v2/accounts", fmt.Sprintf(`{"username":"leaky","email":"x%s@acme.example","type":"subaccount","manager_id":%d}`, secret, acme), "email"},
		{"stored hash as device name", "/api/v2/objects", fmt.Sprintf(`{"imei":"leak-1","name":%q,"account_id":%d}`, hex.EncodeToString(hash[:]), acme), "name"},
	}
	for _, c := range refused {
		before := a.auditCount(t)
		res := a.send(http.MethodPost, c.path, tok, c.body)
		denial(t, res, http.StatusBadRequest, "VALIDATION_FAILED", "")
		fields, _ := res.body["error"].(map[string]any)["details"].(map[string]any)["fields"].(map[string]any)
		if reason, _ := fields[c.field].(string); !strings.Contains(reason, "token secret") {
			t.Fatalf("%s: fields %v, want %s", c.name, fields, c.field)
		}
		if strings.Contains(string(res.raw), secret) || strings.Contains(string(res.raw), hex.EncodeToString(hash[:])) {
			t.Fatalf("%s: the answer repeats the value: %s", c.name, res.raw)
		}
		if a.auditCount(t) != before {
			t.Fatalf("%s: audit row stored", c.name)
		}
	}
	if n := a.count(t, `SELECT count(*) FROM accounts WHERE username = 'leaky'`) + a.count(t, `SELECT count(*) FROM objects WHERE imei = 'leak-1'`) +
		a.count(t, `SELECT count(*) FROM tokens WHERE name = ?`, secret); n != 0 {
		t.Fatalf("%d rows written by refused requests", n)
	}
}
