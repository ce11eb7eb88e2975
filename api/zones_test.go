package api_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// zoneReq sends a zone request with the demo token tok and a JSON body.
func (a *testAPI) zoneReq(method, path, tok, body string, headers ...string) response {
	a.t.Helper()
	h := append([]string{"Authorization", "Bearer " + tok}, headers...)
	if body == "" {
		return a.do(method, path, nil, h...)
	}
	return a.do(method, path, strings.NewReader(body), append(h, "Content-Type", "application/json")...)
}

// zoneCount is the number of rows of zones.
// withoutDemoZones deletes the demo data's zones (the tests count and
// list the zones they write; the demo rule "Depot geofence" then names a
// zone that no longer exists).
func (a *testAPI) withoutDemoZones(t *testing.T) {
	t.Helper()
	a.exec(t, "DELETE FROM zones")
}

func (a *testAPI) zoneCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := a.db.NewRaw("SELECT count(*) FROM zones").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

const (
	circleBody  = `{"name": "Depot", "kind": "circle", "center": {"lat": 52.52, "lon": 13.405}, "radius_m": 250, "color": "#3388ff"}`
	polygonBody = `{"name": "Yard", "kind": "polygon", "points": [{"lat": -10, "lon": 170}, {"lat": -10, "lon": -170}, {"lat": 10, "lon": -170}, {"lat": 10, "lon": 170}, {"lat": -10, "lon": 170}]}`
)

// TestZonesCRUD: a user draws a circle and a polygon (across the
// antimeridian), lists, reads, changes and deletes them; every write is
// audited; a keyed retry answers the first zone.
func TestZonesCRUD(t *testing.T) {
	a := newTestAPI(t)
	a.withoutDemoZones(t)
	tok := demoToken(t, "acme-all")
	c := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, circleBody, "Idempotency-Key", "zone-1")
	if c.status != http.StatusCreated {
		t.Fatalf("create circle: %d %s", c.status, c.raw)
	}
	circle := c.data(t)
	if circle["kind"] != "circle" || circle["radius_m"] != 250.0 || circle["points"] != nil {
		t.Fatalf("circle %v", circle)
	}
	if ctr, _ := circle["center"].(map[string]any); ctr["lat"] != 52.52 || ctr["lon"] != 13.405 {
		t.Fatalf("center %v", circle["center"])
	}
	again := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, circleBody, "Idempotency-Key", "zone-1")
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || again.data(t)["id"] != circle["id"] {
		t.Fatalf("replay: %d %s", again.status, again.raw)
	}
	if r := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, polygonBody, "Idempotency-Key", "zone-1"); r.errorCode(t) != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("reused key: %d %s", r.status, r.raw)
	}
	p := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, polygonBody)
	if p.status != http.StatusCreated {
		t.Fatalf("create polygon: %d %s", p.status, p.raw)
	}
	poly := p.data(t)
	if pts, _ := poly["points"].([]any); len(pts) != 5 || poly["center"] != nil || poly["radius_m"] != nil {
		t.Fatalf("polygon %v", poly)
	}
	list := a.get("/api/v2/zones?sort=name&kind=polygon", tok)
	if list.status != http.StatusOK {
		t.Fatalf("list: %d %s", list.status, list.raw)
	}
	if rows, _ := list.body["data"].([]any); len(rows) != 1 || rows[0].(map[string]any)["name"] != "Yard" {
		t.Fatalf("list %s", list.raw)
	}
	if r := a.get("/api/v2/zones?search=dep", tok); len(r.body["data"].([]any)) != 1 {
		t.Fatalf("search %s", r.raw)
	}
	id := fmt.Sprint(int64(circle["id"].(float64)))
	if r := a.get("/api/v2/zones/"+id, tok); r.status != http.StatusOK || r.data(t)["name"] != "Depot" {
		t.Fatalf("get: %d %s", r.status, r.raw)
	}
	r := a.zoneReq(http.MethodPatch, "/api/v2/zones/"+id, tok, `{"name": "Depot north", "radius_m": 300}`)
	if r.status != http.StatusOK || r.data(t)["name"] != "Depot north" || r.data(t)["radius_m"] != 300.0 || r.data(t)["center"] == nil {
		t.Fatalf("patch: %d %s", r.status, r.raw)
	}
	// a circle made a polygon needs points; with them, the circle's fields go
	r = a.zoneReq(http.MethodPatch, "/api/v2/zones/"+id, tok, `{"kind": "polygon"}`)
	if r.errorCode(t) != "VALIDATION_FAILED" || !strings.Contains(string(r.raw), `"points"`) {
		t.Fatalf("kind without points: %d %s", r.status, r.raw)
	}
	r = a.zoneReq(http.MethodPatch, "/api/v2/zones/"+id, tok, `{"kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 0, "lon": 0}]}`)
	if r.status != http.StatusOK || r.data(t)["center"] != nil || r.data(t)["radius_m"] != nil {
		t.Fatalf("to polygon: %d %s", r.status, r.raw)
	}
	// a rule of the account naming the zone keeps it
	a.exec(t, "UPDATE events SET zones = ARRAY[?] WHERE name = 'Depot geofence'", id)
	r = a.zoneReq(http.MethodDelete, "/api/v2/zones/"+id, tok, "")
	if r.errorCode(t) != "CONFLICT" || !strings.Contains(string(r.raw), "event_ids") {
		t.Fatalf("delete named zone: %d %s", r.status, r.raw)
	}
	a.exec(t, "UPDATE events SET zones = '{}' WHERE name = 'Depot geofence'")
	if r := a.zoneReq(http.MethodDelete, "/api/v2/zones/"+id, tok, ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	if r := a.get("/api/v2/zones/"+id, tok); r.errorCode(t) != "NOT_FOUND" {
		t.Fatalf("deleted zone: %d %s", r.status, r.raw)
	}
	var actions []string
	if err := a.db.NewRaw("SELECT action FROM audit_events WHERE action LIKE 'zone.%' ORDER BY id").Scan(context.Background(), &actions); err != nil {
		t.Fatal(err)
	}
	if want := "zone.create zone.create zone.update zone.update zone.delete"; strings.Join(actions, " ") != want {
		t.Fatalf("audited %v, want %s", actions, want)
	}
}

// TestZonesBadInput: every field wrong — type, range, length, unknown,
// null, and the shapes places refuses — is a 400 naming the field, never a
// 500, and writes nothing.
func TestZonesBadInput(t *testing.T) {
	a := newTestAPI(t)
	a.withoutDemoZones(t)
	tok := demoToken(t, "acme-all")
	ring := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"name": "Big", "kind": "polygon", "points": [`)
		for i := range n - 1 {
			fmt.Fprintf(&b, `{"lat": %g, "lon": %g},`, 10*sinDeg(360*float64(i)/float64(n-1)), 10*cosDeg(360*float64(i)/float64(n-1)))
		}
		b.WriteString(`{"lat": 0, "lon": 10}]}`)
		return b.String()
	}
	circle := func(field string) string {
		return `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 10, ` + field + `}`
	}
	for _, tc := range []struct {
		name, body, code, field string
	}{
		{"not_json", `{"name": `, "INVALID_BODY", ""},
		{"unknown_field", circle(`"shape": 1`), "INVALID_BODY", "shape"},
		{"unknown_nested", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": 2, "alt": 3}, "radius_m": 10}`, "INVALID_BODY", "center.alt"},
		{"name_number", `{"name": 5, "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 10}`, "INVALID_BODY", "name"},
		{"name_missing", `{"kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 10}`, "VALIDATION_FAILED", "name"},
		{"name_blank", `{"name": "  ", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 10}`, "VALIDATION_FAILED", "name"},
		{"name_long", `{"name": "` + strings.Repeat("é", 101) + `", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 10}`, "VALIDATION_FAILED", "name"},
		{"name_nul", `{"name": "a\u0000b", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 10}`, "VALIDATION_FAILED", "name"},
		{"kind_unknown", `{"name": "C", "kind": "square"}`, "VALIDATION_FAILED", "kind"},
		{"kind_null", `{"name": "C", "kind": null}`, "VALIDATION_FAILED", "kind"},
		{"kind_array", `{"name": "C", "kind": ["circle"]}`, "INVALID_BODY", "kind"},
		{"color_bad", circle(`"color": "blue"`), "VALIDATION_FAILED", "color"},
		{"color_number", circle(`"color": 3`), "INVALID_BODY", "color"},
		{"center_string", `{"name": "C", "kind": "circle", "center": "52,13", "radius_m": 10}`, "INVALID_BODY", "center"},
		{"center_missing", `{"name": "C", "kind": "circle", "radius_m": 10}`, "VALIDATION_FAILED", "center"},
		{"lat_range", `{"name": "C", "kind": "circle", "center": {"lat": 91, "lon": 2}, "radius_m": 10}`, "VALIDATION_FAILED", "center.lat"},
		{"lon_range", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": -181}, "radius_m": 10}`, "VALIDATION_FAILED", "center.lon"},
		{"lat_nan_string", `{"name": "C", "kind": "circle", "center": {"lat": "NaN", "lon": 2}, "radius_m": 10}`, "INVALID_BODY", "center.lat"},
		{"lon_infinity_string", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": "Infinity"}, "radius_m": 10}`, "INVALID_BODY", "center.lon"},
		{"radius_1e400", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 1e400}`, "INVALID_BODY", ""},
		{"radius_zero", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 0}`, "VALIDATION_FAILED", "radius_m"},
		{"radius_negative", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": -1}`, "VALIDATION_FAILED", "radius_m"},
		{"radius_huge", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": 1e300}`, "VALIDATION_FAILED", "radius_m"},
		{"radius_string", `{"name": "C", "kind": "circle", "center": {"lat": 1, "lon": 2}, "radius_m": "10"}`, "INVALID_BODY", "radius_m"},
		{"points_on_circle", circle(`"points": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 0, "lon": 0}]`), "VALIDATION_FAILED", "points"},
		{"points_null", `{"name": "P", "kind": "polygon", "points": null}`, "INVALID_BODY", "points"},
		{"points_object", `{"name": "P", "kind": "polygon", "points": {"lat": 0}}`, "INVALID_BODY", "points"},
		{"points_missing", `{"name": "P", "kind": "polygon"}`, "VALIDATION_FAILED", "points"},
		{"points_3", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 0, "lon": 0}]}`, "VALIDATION_FAILED", "points"},
		{"points_1002", ring(1002), "VALIDATION_FAILED", "points"},
		{"point_lat_range", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 95, "lon": 0}, {"lat": 0, "lon": 0}]}`, "VALIDATION_FAILED", "points[3].lat"},
		{"point_unknown_key", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lng": 0}]}`, "INVALID_BODY", "points[0].lng"},
		{"point_string", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": "1", "lon": 1}]}`, "INVALID_BODY", "points.lat"},
		{"unclosed", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 1, "lon": 0}]}`, "VALIDATION_FAILED", "points[3]"},
		{"bow_tie", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": 1, "lon": 1}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 0}, {"lat": 0, "lon": 0}]}`, "VALIDATION_FAILED", "points"},
		{"repeated", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 1}, {"lat": 0, "lon": 0}]}`, "VALIDATION_FAILED", "points[2]"},
		{"collinear", `{"name": "P", "kind": "polygon", "points": [{"lat": 0, "lon": 0}, {"lat": 0, "lon": 1}, {"lat": 0, "lon": 2}, {"lat": 0, "lon": 0}]}`, "VALIDATION_FAILED", "points"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, tc.body)
			if r.status != http.StatusBadRequest || r.errorCode(t) != tc.code {
				t.Fatalf("%d %s, want 400 %s", r.status, r.raw, tc.code)
			}
			if tc.field != "" && !strings.Contains(string(r.raw), `"`+tc.field+`"`) {
				t.Fatalf("%s does not name %s", r.raw, tc.field)
			}
		})
	}
	if n := a.zoneCount(t); n != 0 {
		t.Fatalf("%d zones written", n)
	}
	// the 1,001 points of the bound are accepted
	if r := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, ring(1001)); r.status != http.StatusCreated {
		t.Fatalf("1,001 points: %d %s", r.status, r.raw)
	}
	// PATCH: null, empty, unknown, and a change that breaks the shape
	id := "1"
	if err := a.db.NewRaw("SELECT id::text FROM zones").Scan(context.Background(), &id); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, body, code, field string }{
		{"empty", `{}`, "VALIDATION_FAILED", "body"},
		{"null_name", `{"name": null}`, "VALIDATION_FAILED", "name"},
		{"null_center", `{"center": null}`, "VALIDATION_FAILED", "center"},
		{"unknown", `{"size": 3}`, "INVALID_BODY", "size"},
		{"bad_point", `{"points": [{"lat": 0, "lon": 0}, {"lat": 1, "lon": 1}, {"lat": 0, "lon": 1}, {"lat": 1, "lon": 0}, {"lat": 0, "lon": 0}]}`, "VALIDATION_FAILED", "points"},
		{"radius_on_polygon", `{"radius_m": 10}`, "VALIDATION_FAILED", "radius_m"},
	} {
		t.Run("patch_"+tc.name, func(t *testing.T) {
			r := a.zoneReq(http.MethodPatch, "/api/v2/zones/"+id, tok, tc.body)
			if r.status != http.StatusBadRequest || r.errorCode(t) != tc.code || !strings.Contains(string(r.raw), `"`+tc.field+`"`) {
				t.Fatalf("%d %s, want 400 %s naming %s", r.status, r.raw, tc.code, tc.field)
			}
		})
	}
	var updates int
	if err := a.db.NewRaw("SELECT count(*) FROM audit_events WHERE action = 'zone.update'").Scan(context.Background(), &updates); err != nil || updates != 0 {
		t.Fatalf("%d updates audited (%v)", updates, err)
	}
}

// TestZonesTenants: another tenant's zone id answers exactly like an
// unknown one on GET, PATCH and DELETE; a subaccount reads its parent's
// zones with event_notifications and writes none; a read-only account
// writes none; the zones quota holds.
func TestZonesTenants(t *testing.T) {
	a := newTestAPI(t)
	a.withoutDemoZones(t)
	acme := demoToken(t, "acme-all")
	c := a.zoneReq(http.MethodPost, "/api/v2/zones", acme, circleBody)
	if c.status != http.StatusCreated {
		t.Fatalf("create: %d %s", c.status, c.raw)
	}
	id := fmt.Sprint(int64(c.data(t)["id"].(float64)))
	hooli := demoToken(t, "tailspin-all")
	reqID := regexp.MustCompile(`"request_id":"[^"]*"`)
	for _, m := range []struct{ method, body string }{{http.MethodGet, ""}, {http.MethodPatch, `{"name": "x"}`}, {http.MethodDelete, ""}} {
		theirs := a.zoneReq(m.method, "/api/v2/zones/"+id, hooli, m.body)
		unknown := a.zoneReq(m.method, "/api/v2/zones/999999", hooli, m.body)
		if theirs.status != http.StatusNotFound || reqID.ReplaceAllString(string(theirs.raw), "") != reqID.ReplaceAllString(string(unknown.raw), "") {
			t.Fatalf("%s another tenant's zone: %d %s, unknown: %s", m.method, theirs.status, theirs.raw, unknown.raw)
		}
	}
	if r := a.get("/api/v2/zones", hooli); len(r.body["data"].([]any)) != 0 {
		t.Fatalf("tailspin lists %s", r.raw)
	}
	// the manager of acme sees it; the subaccount of acme without
	// event_notifications does not; globex's subaccount with it sees
	// globex's zones only
	if r := a.get("/api/v2/zones/"+id, demoToken(t, "fleetco-all")); r.status != http.StatusOK {
		t.Fatalf("manager: %d %s", r.status, r.raw)
	}
	night := demoToken(t, "acme-night-all")
	if r := a.get("/api/v2/zones", night); r.errorCode(t) != "PRIVILEGE_REQUIRED" {
		t.Fatalf("subaccount without event_notifications: %d %s", r.status, r.raw)
	}
	a.exec(t, "UPDATE accounts SET privileges = '{event_notifications}' WHERE username = 'acme-night'")
	if r := a.get("/api/v2/zones/"+id, night); r.status != http.StatusOK {
		t.Fatalf("subaccount reads its parent's zone: %d %s", r.status, r.raw)
	}
	for _, m := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/v2/zones", circleBody}, {http.MethodPatch, "/api/v2/zones/" + id, `{"name": "x"}`}, {http.MethodDelete, "/api/v2/zones/" + id, ""},
	} {
		if r := a.zoneReq(m.method, m.path, night, m.body); r.errorCode(t) != "PRIVILEGE_REQUIRED" {
			t.Fatalf("subaccount %s: %d %s", m.method, r.status, r.raw)
		}
	}
	if r := a.zoneReq(http.MethodPost, "/api/v2/zones", demoToken(t, "umbrella-all"), circleBody); r.errorCode(t) != "READ_ONLY_ACCOUNT" {
		t.Fatalf("read-only: %d %s", r.status, r.raw)
	}
	a.exec(t, "UPDATE accounts SET quota_zones = 1 WHERE username = 'acme'")
	r := a.zoneReq(http.MethodPost, "/api/v2/zones", acme, polygonBody)
	if r.errorCode(t) != "QUOTA_EXCEEDED" || !strings.Contains(string(r.raw), `"zones"`) {
		t.Fatalf("quota: %d %s", r.status, r.raw)
	}
	if n := a.zoneCount(t); n != 1 {
		t.Fatalf("%d zones", n)
	}
}

func sinDeg(d float64) float64 { return math.Sin(d * math.Pi / 180) }
func cosDeg(d float64) float64 { return math.Cos(d * math.Pi / 180) }
