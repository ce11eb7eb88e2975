package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestZonesInForce: through POST /readings, a zone_in rule fires once on
// entering its zone, not while staying, and again on re-entering; zone_out
// fires on leaving; the first reading only sets the state and a reading
// without a position changes nothing; a polygon across the antimeridian
// holds what lies on both sides of it; a rule naming another tenant's zone
// never fires and GET /events/{id} says it is not evaluable.
func TestZonesInForce(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	ctx := context.Background()
	zoneID := func(body string) string {
		r := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, body)
		if r.status != http.StatusCreated {
			t.Fatalf("zone: %d %s", r.status, r.raw)
		}
		return fmt.Sprint(int64(r.data(t)["id"].(float64)))
	}
	// a circle of 1 km at the depot, and a polygon across the antimeridian
	depot := zoneID(`{"name": "Depot", "kind": "circle", "center": {"lat": 52.52, "lon": 13.405}, "radius_m": 1000}`)
	pacific := zoneID(polygonBody)
	// another tenant's zone (tailspin's), in the same place as acme's depot
	r := a.zoneReq(http.MethodPost, "/api/v2/zones", demoToken(t, "tailspin-all"), `{"name": "Theirs", "kind": "circle", "center": {"lat": 52.52, "lon": 13.405}, "radius_m": 1000}`)
	if r.status != http.StatusCreated {
		t.Fatalf("tailspin zone: %d %s", r.status, r.raw)
	}
	theirs := fmt.Sprint(int64(r.data(t)["id"].(float64)))
	a.exec(t, `UPDATE events SET active = false WHERE account_id = (SELECT id FROM accounts WHERE username = 'acme')`)
	a.exec(t, `INSERT INTO events (account_id, name, type, active, imei, zones, zone_trigger)
		SELECT id, v.name, v.type, true, ARRAY[?], v.zones::text[], v.trig FROM accounts,
		(VALUES ('in depot', 'zone_in', ARRAY[?], 'in'), ('out depot', 'zone_out', ARRAY[?], 'out'),
		        ('in pacific', 'zone_in', ARRAY[?], 'in'), ('in theirs', 'zone_in', ARRAY[?], 'in'))
		AS v(name, type, zones, trig) WHERE username = 'acme'`, truck7, depot, depot, pacific, theirs)
	base := time.Now().UTC().Add(-time.Hour)
	step := 0
	send := func(pos *[2]float64) {
		t.Helper()
		step++
		item := map[string]any{"imei": truck7, "time": base.Add(time.Duration(step) * time.Minute).Format(time.RFC3339), "speed": 10}
		if pos != nil {
			item["lat"], item["lon"] = pos[0], pos[1]
		}
		if res := a.postReadings(tok, batch(item)).ingest(t); res.Accepted != 1 {
			t.Fatalf("reading %d: %+v", step, res)
		}
	}
	fired := func() []string {
		t.Helper()
		var names []string
		if err := a.db.NewRaw(`SELECT e.name FROM notifications n JOIN events e ON e.event_id = n.event_id
			WHERE n.imei = ? AND e.type IN ('zone_in', 'zone_out') ORDER BY n.id`, truck7).Scan(ctx, &names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	inDepot, nearDepot := [2]float64{52.521, 13.406}, [2]float64{52.54, 13.405} // 2.2 km north: outside
	want := []string{}
	expect := func(what string, more ...string) {
		t.Helper()
		want = append(want, more...)
		if got := fired(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("%s: fired %q, want %q", what, got, want)
		}
	}
	send(&inDepot)
	expect("the first reading only sets the state")
	send(&inDepot)
	expect("staying in")
	send(nil)
	expect("no position")
	send(&nearDepot)
	expect("leaving", "out depot")
	send(nil)
	send(&nearDepot)
	expect("staying out")
	send(&inDepot)
	expect("entering", "in depot")
	send(&inDepot)
	expect("staying in again")
	send(&nearDepot)
	send(&inDepot)
	expect("re-entering", "out depot", "in depot")
	// across the antimeridian: from outside to 179.5 E, then to 179.5 W
	// (still inside), out, and in again on the other side
	send(&[2]float64{0, 160})
	expect("out of both", "out depot")
	send(&[2]float64{1, 179.5})
	expect("into the pacific polygon, east of the antimeridian", "in pacific")
	send(&[2]float64{-1, -179.5})
	expect("across the antimeridian, still inside")
	send(&[2]float64{0, -160})
	send(&[2]float64{5, -175})
	expect("back in, west of the antimeridian", "in pacific")
	// the rule naming tailspin's zone never fired, even at the depot, and
	// says why
	var id int64
	if err := a.db.NewRaw(`SELECT event_id FROM events WHERE name = 'in theirs'`).Scan(ctx, &id); err != nil {
		t.Fatal(err)
	}
	ev := a.get(fmt.Sprintf("/api/v2/events/%d", id), tok).data(t)
	if ev["evaluable"] != false || !strings.Contains(ev["reason"].(string), theirs) {
		t.Fatalf("rule naming another tenant's zone: %v", ev)
	}
	if ev := a.get("/api/v2/events?name=in%20depot", tok); !strings.Contains(string(ev.raw), `"evaluable":true`) {
		t.Fatalf("zone rule not evaluable: %s", ev.raw)
	}
}
