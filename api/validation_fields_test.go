package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// fieldFaults is one body route for TestValidationOneFaultPerField: a
// valid base body, and for each field a value of the right JSON type that
// fails validation, with the name details.fields reports it under.
type fieldFaults struct {
	token, method, path string
	base                func(n int) map[string]any
	bad                 []fieldFault
}

type fieldFault struct {
	key   string // the body's key
	value any
	field string // the name in details.fields (key when empty)
}

// TestValidationOneFaultPerField: a VALIDATION_FAILED names every field
// that fails, each under its own name with its own reason, whatever else
// is wrong in the body (issue 34: POST /tokens with a bad permission and a
// past expires_at reported the permission's fault under expires_at, and
// the expiry's was lost). For every body route, each bad value is sent
// alone, then every pair and all at once: the fields reported are exactly
// those sent bad, each with the reason it has alone.
func TestValidationOneFaultPerField(t *testing.T) {
	a := newTestAPI(t)
	acme, night := a.accountID(t, "acme"), a.accountID(t, "acme-night")
	long := func(n int) string { return strings.Repeat("x", n) }
	routes := []fieldFaults{
		{"acme-all", http.MethodPost, "/api/v2/tokens", func(n int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("faults-%d", n), "permissions": []any{"GET /me"}}
		}, []fieldFault{
			{"name", "", ""},
			{"permissions", []any{"GET /servics"}, ""},
			{"expires_at", "2001-01-01T00:00:00Z", ""},
			{"rate_limit", 0, ""},
			{"account_id", 0, ""},
		}},
		{"acme-all", http.MethodPost, "/api/v2/tokens", func(n int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("faults-b-%d", n), "permissions": []any{"GET /me"}}
		}, []fieldFault{
			{"name", "a\u0000b", ""},
			{"permissions", []any{"GET /me", "GET /me"}, ""},
			{"expires_at", "2001-01-01T00:00:00+02:00", ""},
		}},
		{"acme-all", http.MethodPost, "/api/v2/tokens", func(n int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("faults-c-%d", n), "permissions": []any{"GET /me"}}
		}, []fieldFault{
			{"expires_at", "9999-12-31T23:30:00-01:00", ""}, // the year 10000 in UTC (was a 500)
			{"rate_limit", 1_000_001, ""},
		}},
		{"acme-all", http.MethodPost, "/api/v2/accounts", func(n int) map[string]any {
			return map[string]any{"username": fmt.Sprintf("faults-%d", n), "type": "subaccount", "manager_id": acme}
		}, []fieldFault{
			{"username", "-x", ""},
			{"email", "not-an-address", ""},
			{"type", "robot", ""},
			{"manager_id", 0, ""},
			{"account_expire_dt", "2026-13-01", ""},
			{"privileges", []any{"nope"}, ""},
			{"rate_limit", 0, ""},
		}},
		{"acme-all", http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", night), func(int) map[string]any {
			return map[string]any{"active": true}
		}, []fieldFault{
			{"email", "not-an-address", ""},
			{"account_expire_dt", "yesterday", ""},
			{"privileges", []any{"nope"}, ""},
			{"rate_limit", 0, ""},
			{"quotas", map[string]any{"devices": -1}, "quotas.devices"},
			{"read_only", nil, ""},
			{"account_expire", nil, ""},
		}},
		{"acme-all", http.MethodPut, fmt.Sprintf("/api/v2/accounts/%d/objects", night), func(int) map[string]any {
			return map[string]any{"imei": []any{}}
		}, []fieldFault{
			{"imei", []any{"not an imei"}, ""},
		}},
		{"acme-all", http.MethodPost, "/api/v2/objects", func(n int) map[string]any {
			return map[string]any{"imei": fmt.Sprintf("FAULTS-%d", n), "account_id": acme}
		}, []fieldFault{
			{"imei", "not an imei", ""},
			{"name", long(101), ""},
			{"account_id", 0, ""},
			{"odometer", -1, ""},
			{"engine_hours", -1, ""},
		}},
		{"acme-all", http.MethodPatch, "/api/v2/objects/1", func(int) map[string]any {
			return map[string]any{"account_id": acme}
		}, []fieldFault{
			{"account_id", 0, ""},
		}},
		{"acme-all", http.MethodPost, "/api/v2/passengers", func(n int) map[string]any {
			return map[string]any{"passenger_name": fmt.Sprintf("Faults %d", n)}
		}, []fieldFault{
			{"passenger_name", " \u200b ", ""},
			{"passenger_assign_id", long(51), ""},
			{"passenger_email", "not-an-address", ""},
			{"passenger_desc", long(1001), ""},
			{"passenger_pickup_point_id", 0, ""},
			{"passenger_idn", "a\u0000b", ""},
		}},
	}
	n := 0
	for _, r := range routes {
		name := r.method + " " + r.path
		send := func(faults []fieldFault) map[string]any {
			t.Helper()
			n++
			body := r.base(n)
			for _, f := range faults {
				body[f.key] = f.value
			}
			raw, _ := json.Marshal(body)
			res := a.send(r.method, r.path, demoToken(t, r.token), string(raw))
			if res.status != http.StatusBadRequest || res.errorCode(t) != "VALIDATION_FAILED" {
				t.Fatalf("%s %s: %d, want 400 VALIDATION_FAILED: %s", name, raw, res.status, res.raw)
			}
			d, _ := res.body["error"].(map[string]any)["details"].(map[string]any)
			fields, _ := d["fields"].(map[string]any)
			if len(fields) == 0 {
				t.Fatalf("%s %s: no details.fields: %s", name, raw, res.raw)
			}
			return fields
		}
		// Alone: the reason each fault has when nothing else is wrong.
		alone := map[string]any{}
		for _, f := range r.bad {
			fields := send([]fieldFault{f})
			if len(fields) != 1 || fields[f.name()] == nil {
				t.Fatalf("%s, %s alone: fields %v, want %s only", name, f.key, fields, f.name())
			}
			alone[f.name()] = fields[f.name()]
		}
		var sets [][]fieldFault
		for i := range r.bad {
			for j := i + 1; j < len(r.bad); j++ {
				sets = append(sets, []fieldFault{r.bad[i], r.bad[j]})
			}
		}
		if len(r.bad) > 2 {
			sets = append(sets, r.bad)
		}
		for _, set := range sets {
			fields := send(set)
			want := map[string]any{}
			for _, f := range set {
				want[f.name()] = alone[f.name()]
			}
			if !maps.Equal(fields, want) {
				t.Errorf("%s with %s bad at once:\n got %v\nwant %v", name, faultKeys(set), fields, want)
			}
		}
	}
}

func (f fieldFault) name() string {
	if f.field != "" {
		return f.field
	}
	return f.key
}

func faultKeys(set []fieldFault) string {
	keys := make([]string, len(set))
	for i, f := range set {
		keys[i] = f.key
	}
	slices.Sort(keys)
	return strings.Join(keys, ", ")
}
