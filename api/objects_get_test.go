package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// objectPath is GET /objects/{id} of id.
func objectPath(id int64) string { return fmt.Sprintf("/api/v2/objects/%d", id) }

// oneObject is the data of a 200 of GET /objects/{id}.
func (r response) oneObject(t *testing.T) map[string]any {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("GET /objects/{id}: status %d: %s", r.status, r.raw)
	}
	r.checkRequestID(t)
	d, ok := r.body["data"].(map[string]any)
	if !ok {
		t.Fatalf("GET /objects/{id}: data is not an object: %s", r.raw)
	}
	return d
}

// TestObjectsByIDState: GET /objects/{id} shows the state fields, null
// until the first reading, then the state POST /readings set, to every
// account type that sees the device, the same JSON as its item of GET
// /objects.
func TestObjectsByIDState(t *testing.T) {
	a := newTestAPI(t)
	acme := demoToken(t, "acme-all")
	id := int64(a.device(t, acme, truck7)["id"].(float64))
	stateFields := []string{"last_time", "lat", "lon", "speed", "heading", "altitude", "ignition", "attributes"}
	before := a.get(objectPath(id), acme).oneObject(t)
	for _, f := range stateFields {
		if v, ok := before[f]; !ok || v != nil {
			t.Fatalf("never reported: %s = %v (present %t), want null", f, v, ok)
		}
	}
	t1 := at(-3 * time.Minute)
	got := a.postReadings(acme, batch(map[string]any{"imei": truck7, "time": t1, "lat": 38.7, "lon": -9.1, "speed": 62.5,
		"heading": 180, "altitude": 12.5, "ignition": true, "odometer": 120500.4, "attributes": map[string]any{"door": false}})).ingest(t)
	if got.Accepted != 1 {
		t.Fatalf("reading: %+v", got)
	}
	want := map[string]any{"id": float64(id), "imei": truck7, "lat": 38.7, "lon": -9.1, "speed": 62.5, "heading": float64(180),
		"altitude": 12.5, "ignition": true, "odometer": float64(120500), "attributes": map[string]any{"door": false}}
	// The user, its subaccount granted the device, its manager, the admin.
	for _, tok := range []string{"acme-all", "acme-night-all", "fleetco-all", "admin-all"} {
		token := demoToken(t, tok)
		d := a.get(objectPath(id), token).oneObject(t)
		for f, v := range want {
			if !reflect.DeepEqual(d[f], v) {
				t.Errorf("%s: %s = %v, want %v", tok, f, d[f], v)
			}
		}
		lastTime, _ := d["last_time"].(string)
		if p, err := time.Parse(time.RFC3339Nano, lastTime); err != nil || !p.Equal(mustTime(t, t1).Round(time.Microsecond)) {
			t.Errorf("%s: last_time %v, want %s", tok, d["last_time"], t1)
		}
		if item := a.device(t, token, truck7); !reflect.DeepEqual(item, d) {
			t.Errorf("%s: GET /objects/{id} %v, its item of GET /objects %v", tok, d, item)
		}
	}
}

// TestObjectsByIDIsolation: for every account type (admin, the two
// managers, users, the two subaccounts, one granted a device and not
// another), every device is 200 with its item of GET /objects exactly when
// the list shows it, and 404 NOT_FOUND otherwise, byte for byte the answer
// for an id that does not exist (apart from the request id). Malformed ids
// are 400 INVALID_PARAMETER, as on the other {id} routes.
func TestObjectsByIDIsolation(t *testing.T) {
	a := newTestAPI(t)
	owners := a.owners(t, "objects", "id")
	tokens := []string{"admin-all", "fleetco-all", "northwind-all", "acme-all", "tailspin-all", "umbrella-all", "acme-night-all", "globex-day-all"}
	for _, tok := range tokens {
		token := demoToken(t, tok)
		items, _ := a.list(t, "/api/v2/objects?per_page=100", token)
		listed := map[float64]map[string]any{}
		for _, it := range items {
			listed[it["id"].(float64)] = it
		}
		missing := withoutRequestID(a.get(objectPath(999999999), token))
		for id, owner := range owners {
			res := a.get(objectPath(int64(id)), token)
			if item, ok := listed[id]; ok {
				if d := res.oneObject(t); !reflect.DeepEqual(d, item) {
					t.Errorf("%s: device %v of %s: %v, list item %v", tok, id, owner, d, item)
				}
				continue
			}
			if res.status != http.StatusNotFound || res.errorCode(t) != "NOT_FOUND" {
				t.Errorf("%s: device %v of %s: %d %s, want 404 NOT_FOUND", tok, id, owner, res.status, res.raw)
			} else if got := withoutRequestID(res); !bytes.Equal(got, missing) {
				t.Errorf("%s: device %v of %s answers\n%s\nnot as a missing device\n%s", tok, id, owner, got, missing)
			}
		}
		// Each account type sees what its scope holds: spot checks that
		// the list (the reference above) is not empty or everything.
		want := map[string]int{"admin-all": len(owners), "fleetco-all": 8, "northwind-all": 3, "acme-all": 3, "tailspin-all": 2, "umbrella-all": 1}[tok]
		if want != 0 && len(listed) != want {
			t.Errorf("%s: %d devices listed, want %d", tok, len(listed), want)
		}
	}
	// A subaccount: the device granted to it, not its parent's other one.
	night := demoToken(t, "acme-night-all")
	truck, van := a.imeiOf(t, "Truck 7"), a.imeiOf(t, "Van 12")
	objectID := func(imei string) int64 {
		return int64(a.count(t, "SELECT id FROM objects WHERE imei = ?", imei))
	}
	if d := a.get(objectPath(objectID(truck)), night).oneObject(t); d["imei"] != truck {
		t.Errorf("granted device: %v", d)
	}
	if res := a.get(objectPath(objectID(van)), night); res.status != http.StatusNotFound || res.errorCode(t) != "NOT_FOUND" {
		t.Errorf("device not granted: %d %s", res.status, res.raw)
	}
	// Ids out of the type's range or not numbers: 400, as GET /events/{id}.
	admin := demoToken(t, "admin-all")
	for _, bad := range []string{"0", "-1", "abc", "1.5", "9223372036854775808", "99999999999999999999"} {
		res := a.get("/api/v2/objects/"+bad, admin)
		if res.status != http.StatusBadRequest || res.errorCode(t) != "INVALID_PARAMETER" {
			t.Errorf("id %s: %d %s", bad, res.status, res.raw)
		}
	}
	if res := a.get(objectPath(9223372036854775807), admin); res.status != http.StatusNotFound || res.errorCode(t) != "NOT_FOUND" {
		t.Errorf("largest id: %d %s", res.status, res.raw)
	}
	if res := a.get(objectPath(objectID(truck))+"?fields=id", admin); res.status != http.StatusBadRequest || res.errorCode(t) != "INVALID_PARAMETER" {
		t.Errorf("a query parameter: %d %s", res.status, res.raw)
	}
	// A token without the permission GET /objects/{id}.
	if res := a.get(objectPath(objectID(truck)), demoToken(t, "acme-services-only")); res.status != http.StatusForbidden || res.errorCode(t) != "TOKEN_PERMISSION_DENIED" {
		t.Errorf("acme-services-only: %d %s", res.status, res.raw)
	}
}
