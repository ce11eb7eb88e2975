package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/uptrace/bun"
)

// bodyCase is a request body the server accepts (2xx) for an operation,
// with every property of its schema present: base(n) must be unique per n
// where the server wants unique values (usernames, IMEIs, token names).
type bodyCase struct {
	token, path string
	base        func(n int) map[string]any
}

// jsonType is the JSON Schema type of a decoded JSON value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return openapi3.TypeNull
	case string:
		return openapi3.TypeString
	case float64:
		return openapi3.TypeNumber
	case bool:
		return openapi3.TypeBoolean
	case []any:
		return openapi3.TypeArray
	}
	return openapi3.TypeObject
}

// wrongTyped is a value of a JSON type the schema s does not allow.
func wrongTyped(s *openapi3.Schema) any {
	for _, v := range []any{"x", 12345.0, true, []any{}, map[string]any{}} {
		jt := jsonType(v)
		if s.Type.Includes(jt) || jt == openapi3.TypeNumber && s.Type.Includes(openapi3.TypeInteger) {
			continue
		}
		return v
	}
	return nil
}

// TestBodiesAgreeWithSchema: one rule, the document describes exactly what
// the server accepts (issue 19 item 19). For every operation that takes a
// body, every property of its schema is sent null, left out, and with a
// value of a wrong JSON type, and the whole body is sent empty; the schema
// (validated by kin-openapi) decides whether each body is valid, and the
// server must agree: 2xx for a valid body, 400 for an invalid one.
func TestBodiesAgreeWithSchema(t *testing.T) {
	a := newTestAPI(t)
	acme, night := a.accountID(t, "acme"), a.accountID(t, "acme-night")
	cases := map[string]bodyCase{
		"POST /accounts": {"acme-all", "/api/v2/accounts", func(n int) map[string]any {
			return map[string]any{"username": fmt.Sprintf("schema-sub-%d", n), "email": "s@acme.example", "type": "subaccount",
				"manager_id": acme, "active": true, "read_only": false, "account_expire": false,
				"account_expire_dt": "2099-12-31", "privileges": []any{"reports"}, "rate_limit": 60, "quotas": map[string]any{"tokens": 5}, "timezone": "Europe/Lisbon"}
		}},
		"PATCH /accounts/{id}": {"acme-all", fmt.Sprintf("/api/v2/accounts/%d", night), func(int) map[string]any {
			return map[string]any{"email": "night@acme.example", "active": true, "read_only": false, "account_expire": false,
				"account_expire_dt": "2099-12-31", "privileges": []any{"reports"}, "rate_limit": 60, "quotas": map[string]any{"tokens": 5}, "timezone": "Asia/Tokyo"}
		}},
		"PUT /accounts/{id}/objects": {"acme-all", fmt.Sprintf("/api/v2/accounts/%d/objects", night), func(int) map[string]any {
			return map[string]any{"imei": []any{"356938035643809"}}
		}},
		"POST /objects": {"acme-all", "/api/v2/objects", func(n int) map[string]any {
			return map[string]any{"imei": fmt.Sprintf("SCHEMA-%d", n), "name": "Crane", "account_id": acme, "odometer": 1, "engine_hours": 2}
		}},
		"PATCH /objects/{id}": {"acme-all", "/api/v2/objects/1", func(int) map[string]any {
			return map[string]any{"account_id": acme} // to its own owner: changes nothing, allowed
		}},
		"POST /passengers": {"acme-all", "/api/v2/passengers", func(n int) map[string]any {
			return map[string]any{"passenger_name": "Schema Case", "passenger_assign_id": fmt.Sprintf("SC-%d", n), "passenger_idn": "idn",
				"passenger_address": "1 Road", "passenger_phone": "+100", "passenger_email": "p@acme.example", "passenger_desc": "d",
				"passenger_client_id": "c", "passenger_active": true, "passenger_pickup_point_id": 3}
		}},
		"POST /readings": {"acme-all", "/api/v2/readings", func(n int) map[string]any {
			return map[string]any{"readings": []any{map[string]any{"imei": "356938035643809",
				"time": time.Now().UTC().Add(-time.Duration(n+1) * time.Second).Format(time.RFC3339Nano)}}}
		}},
		"POST /tokens": {"acme-all", "/api/v2/tokens", func(n int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("schema-%d", n), "permissions": []any{"GET /me"}, "account_id": acme,
				"expires_at": "2099-01-01T00:00:00Z", "rate_limit": 10}
		}},
		"POST /webhooks": {"acme-all", "/api/v2/webhooks", func(n int) map[string]any {
			return map[string]any{"url": fmt.Sprintf("https://hooks.acme.example/schema-%d", n), "description": "d",
				"types": []any{"overspeed"}, "active": true}
		}},
		// acme's demo webhook, imported without a secret: active stays false
		// (true is 409 CONFLICT until its secret is rotated).
		"PATCH /webhooks/{id}": {"acme-all", fmt.Sprintf("/api/v2/webhooks/%d", a.demoWebhookID(t, "acme")), func(n int) map[string]any {
			return map[string]any{"url": fmt.Sprintf("https://hooks.acme.example/patched-%d", n), "description": "d",
				"types": []any{"sos"}, "active": false}
		}},
		"POST /zones":       {"acme-all", "/api/v2/zones", zoneCircleBody},
		"PATCH /zones/{id}": {"acme-all", fmt.Sprintf("/api/v2/zones/%d", a.demoZoneID(t, "acme", "circle")), zoneCircleBody},
		// The writes of docs/design.md §15, on acme's van and acme's demo
		// rows (a name unique per n: the names are unique in the account or
		// per device).
		"POST /events": {"acme-all", "/api/v2/events", func(n int) map[string]any {
			return eventBody(fmt.Sprintf("schema-event-%d", n), map[string]any{"account_id": acme})
		}},
		"PATCH /events/{id}": {"acme-all", fmt.Sprintf("/api/v2/events/%d", a.demoRowID(t, "events", "event_id", "acme")), func(n int) map[string]any {
			return eventBody(fmt.Sprintf("schema-event-patched-%d", n), nil)
		}},
		"POST /services": {"acme-all", "/api/v2/services", func(n int) map[string]any {
			return serviceBody(fmt.Sprintf("schema-service-%d", n), map[string]any{"account_id": acme})
		}},
		"PATCH /services/{id}": {"acme-all", fmt.Sprintf("/api/v2/services/%d", a.demoRowID(t, "services", "service_id", "acme")), func(n int) map[string]any {
			return serviceBody(fmt.Sprintf("schema-service-patched-%d", n), nil)
		}},
		"POST /services/{id}/done": {"acme-all", fmt.Sprintf("/api/v2/services/%d/done", a.demoRowID(t, "services", "service_id", "acme")), func(int) map[string]any {
			return map[string]any{"time": time.Now().UTC().Add(-time.Hour).Format(time.RFC3339), "odometer": 1000, "engine_hours": 10}
		}},
		"POST /reports": {"acme-all", "/api/v2/reports", func(n int) map[string]any {
			return reportBody(fmt.Sprintf("schema-report-%d", n), map[string]any{"account_id": acme})
		}},
		"PATCH /reports/{id}": {"acme-all", fmt.Sprintf("/api/v2/reports/%d", a.demoRowID(t, "reports", "report_id", "acme")), func(n int) map[string]any {
			return reportBody(fmt.Sprintf("schema-report-patched-%d", n), nil)
		}},
	}
	// more are other bases of an operation, for a body whose fields exclude
	// each other: the bases together have every property, and each is
	// checked like the first. A zone's circle fields and its polygon's; a
	// PATCH keeps the kind of the zone it changes (a new kind needs all of
	// its geometry): acme's demo circle and polygon.
	more := map[string][]bodyCase{
		"POST /zones":       {{"acme-all", "/api/v2/zones", zonePolygonBody}},
		"PATCH /zones/{id}": {{"acme-all", fmt.Sprintf("/api/v2/zones/%d", a.demoZoneID(t, "acme", "polygon")), zonePolygonBody}},
	}
	doc := loadOpenAPI(t, openAPIDoc(t))
	n := 0
	checked := 0
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			if op.RequestBody == nil {
				continue
			}
			name := method + " " + path
			c, ok := cases[name]
			if !ok {
				t.Errorf("%s takes a body: add a base body to this test", name)
				continue
			}
			delete(cases, name)
			schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
			props := slices.Sorted(func(yield func(string) bool) {
				for p := range schema.Properties {
					if !yield(p) {
						return
					}
				}
			})
			keys := map[string]bool{}
			for _, b := range append([]bodyCase{c}, more[name]...) {
				for k := range b.base(0) {
					keys[k] = true
				}
			}
			if len(keys) != len(props) {
				t.Fatalf("%s: the base bodies have %d properties, the schema %d (%v)", name, len(keys), len(props), props)
			}
			type variant struct {
				what string
				body map[string]any
				c    bodyCase
			}
			var variants []variant
			for _, c := range append([]bodyCase{c}, more[name]...) {
				add := func(what string, edit func(b map[string]any)) {
					n++
					b := c.base(n)
					edit(b)
					variants = append(variants, variant{what, b, c})
				}
				add("base", func(map[string]any) {})
				add("{}", func(b map[string]any) { clear(b) })
				for _, p := range props {
					add(p+" null", func(b map[string]any) { b[p] = nil })
					add(p+" missing", func(b map[string]any) { delete(b, p) })
					add(p+" wrong type", func(b map[string]any) { b[p] = wrongTyped(schema.Properties[p].Value) })
				}
			}
			for _, v := range variants {
				raw, _ := json.Marshal(v.body)
				valid := visit(schema, v.body) == nil // JSON Schema 2020-12: the if/then too
				res := a.send(method, v.c.path, demoToken(t, v.c.token), string(raw))
				checked++
				ok := res.status >= 200 && res.status < 300
				if valid && !ok && res.status != http.StatusBadRequest {
					t.Logf("%s, %s: valid, refused %d (%s)", name, v.what, res.status, res.raw)
				}
				switch {
				case v.what == "base" && !ok:
					t.Fatalf("%s: the base body %s is refused: %d %s", name, raw, res.status, res.raw)
				case valid && res.status == http.StatusBadRequest:
					// A valid body may still be refused for who asks (403) or
					// what exists (404, 409): not the document's business.
					t.Errorf("%s, %s: the schema accepts %s, the server answers %d %s", name, v.what, raw, res.status, res.raw)
				case !valid && res.status != http.StatusBadRequest:
					t.Errorf("%s, %s: the schema refuses %s, the server answers %d %s", name, v.what, raw, res.status, res.raw)
				}
			}
		}
	}
	if len(cases) > 0 {
		t.Errorf("base bodies of operations without a body: %v", sort.StringSlice(mapsKeys(cases)))
	}
	if checked < 60 {
		t.Fatalf("only %d bodies checked", checked)
	}
	_ = strings.Contains
}

// zoneCircleBody and zonePolygonBody are zone bodies with every field of
// their kind.
func zoneCircleBody(n int) map[string]any {
	return map[string]any{"name": fmt.Sprintf("schema-circle-%d", n), "kind": "circle", "center": map[string]any{"lat": 48.85, "lon": 2.35},
		"radius_m": 400, "color": "#3388ff"}
}

func zonePolygonBody(n int) map[string]any {
	return map[string]any{"name": fmt.Sprintf("schema-polygon-%d", n), "kind": "polygon", "points": []any{
		map[string]any{"lat": 48.80, "lon": 2.30}, map[string]any{"lat": 48.80, "lon": 2.32}, map[string]any{"lat": 48.82, "lon": 2.31},
		map[string]any{"lat": 48.80, "lon": 2.30}}, "color": "#1565c0"}
}

// eventBody is an event rule's body with every field of PATCH
// /events/{id}, named name, and more's fields (account_id on a create).
func eventBody(name string, more map[string]any) map[string]any {
	b := map[string]any{"type": "sos", "name": name, "active": true, "week_days": []any{"mon", "fri"},
		"day_time": map[string]any{"from": "22:00", "to": "06:00"}, "imei": []any{acmeVan}, "checked_value": "100",
		"route_trigger": "off", "zone_trigger": "off", "routes": []any{}, "zones": []any{}, "notify_system": true,
		"notify_email": true, "notify_email_address": "a@acme.example", "notify_sms": false, "notify_sms_number": "+100",
		"notify_telegram": false, "email_template_id": 0, "sms_template_id": 0, "cmd_send": false, "cmd_gateway": "gprs",
		"cmd_type": "ascii", "cmd_string": "getinfo"}
	maps.Copy(b, more)
	return b
}

// serviceBody is a service record's body with every field of PATCH
// /services/{id} (on acme's van), named name, and more's fields.
func serviceBody(name string, more map[string]any) map[string]any {
	b := map[string]any{"imei": acmeVan, "name": name, "odo": true, "odo_interval": 40000, "odo_last": 50000, "engh": true,
		"engh_interval": 500, "engh_last": 100, "days": true, "days_interval": 365, "days_last": "2026-01-02", "odo_left": true,
		"odo_left_num": 1000, "engh_left": true, "engh_left_num": 50, "days_left": true, "days_left_num": 30, "update_last": true,
		"notify_service_expire": true}
	maps.Copy(b, more)
	return b
}

// reportBody is a report's body with every field of PATCH /reports/{id}
// (on acme's van), named name, and more's fields.
func reportBody(name string, more map[string]any) map[string]any {
	b := map[string]any{"name": name, "type": "drives_stops", "format": "pdf", "show_addresses": true, "zones_addresses": false,
		"show_trip_image": false, "stop_duration": 5, "speed_limit": 90, "imei": []any{acmeVan}, "zone_ids": []any{},
		"sensor_names": []any{"fuel"}, "data_items": []any{"route_start"}, "schedule_period": "dw",
		"schedule_email_address": "r@acme.example", "dt_schedule_d": "2027-03-02T06:00:00Z", "dt_schedule_w": "2027-03-01T06:00:00Z"}
	maps.Copy(b, more)
	return b
}

// demoRowID is the smallest id (column idCol) of username's rows of table.
func (a *testAPI) demoRowID(t *testing.T, table, idCol, username string) int64 {
	t.Helper()
	var id int64
	if err := a.db.NewRaw("SELECT min(r.?) FROM ? r JOIN accounts a ON a.id = r.account_id WHERE a.username = ?",
		bun.Ident(idCol), bun.Ident(table), username).Scan(context.Background(), &id); err != nil {
		t.Fatalf("demo %s of %s: %v", table, username, err)
	}
	return id
}

func mapsKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
