package api_test

import (
	"net/http"
	"testing"
)

func TestServicesDue(t *testing.T) {
	a := newTestAPI(t)
	admin := demoToken(t, "admin-all")
	all := a.get("/api/v2/services/due", admin)
	if all.status != http.StatusOK {
		t.Fatalf("status %d: %s", all.status, all.raw)
	}
	all.checkRequestID(t)
	items := all.body["data"].([]any)
	if len(items) == 0 {
		t.Fatal("no due services in the demo data")
	}
	prev := 1e18
	for _, it := range items {
		m := it.(map[string]any)
		id := m["service_id"].(float64)
		if id >= prev {
			t.Fatalf("not newest first: %v after %v", id, prev)
		}
		prev = id
		if m["state"] != "expired" && m["state"] != "soon" {
			t.Fatalf("state %v", m["state"])
		}
		if due, _ := m["due"].([]any); len(due) == 0 {
			t.Fatalf("listed without a due criterion: %v", m)
		}
		if _, ok := m["object_name"].(string); !ok {
			t.Fatalf("no object_name: %v", m)
		}
	}
	// Extra properties are merged into due records as into service records.
	a.exec(t, `UPDATE services SET extra = '{"inspector": "Ana", "name": "not this"}' WHERE service_id = ?`, int64(items[0].(map[string]any)["service_id"].(float64)))
	first := a.get("/api/v2/services/due", admin).body["data"].([]any)[0].(map[string]any)
	if first["inspector"] != "Ana" || first["name"] == "not this" {
		t.Fatalf("extra properties: %v", first)
	}
	// Every account type sees a subset of the admin's due list, within scope.
	night := a.get("/api/v2/services/due", demoToken(t, "acme-night-all"))
	for _, it := range night.body["data"].([]any) {
		if imei := it.(map[string]any)["imei"]; imei != "356938035643809" {
			t.Fatalf("subaccount saw due service of %v", imei)
		}
	}
	tail := a.get("/api/v2/services/due", demoToken(t, "tailspin-all"))
	acme := a.get("/api/v2/services/due", demoToken(t, "acme-all"))
	seen := map[float64]bool{}
	for _, r := range []response{tail, acme} {
		for _, it := range r.body["data"].([]any) {
			id := it.(map[string]any)["service_id"].(float64)
			if seen[id] {
				t.Fatalf("service %v due for two tenants", id)
			}
			seen[id] = true
		}
	}
	if res := a.get("/api/v2/services/due?page=1", admin); res.status != 400 || res.errorCode(t) != "INVALID_PARAMETER" {
		t.Fatalf("unknown parameter: %d %s", res.status, res.raw)
	}
}
