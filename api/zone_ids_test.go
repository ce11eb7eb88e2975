package api_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// zoneIDsReqID is the request id of an error envelope.
var zoneIDsReqID = regexp.MustCompile(`"request_id":"[^"]*"`)

// newZone creates a circle zone named name with tok and returns its id.
func (a *testAPI) newZone(t *testing.T, tok, name string) string {
	t.Helper()
	r := a.zoneReq(http.MethodPost, "/api/v2/zones", tok, strings.Replace(circleBody, `"Depot"`, fmt.Sprintf("%q", name), 1))
	if r.status != http.StatusCreated {
		t.Fatalf("zone create: %d %s", r.status, r.raw)
	}
	return fmt.Sprint(int64(r.data(t)["id"].(float64)))
}

// TestZoneIDsOfWrites: a rule's zones and a report's zone_ids name only
// zones of the row's account (docs/decisions.md, "Zone ids of rules and
// reports"): the own zone is accepted; another tenant's, an absent one, a
// deleted one and one not in canonical form are the same 400 naming the
// field, and write nothing (no row, no audit event).
func TestZoneIDsOfWrites(t *testing.T) {
	a := newTestAPI(t)
	acme := demoToken(t, "acme-all")
	own := a.newZone(t, acme, "Own")
	theirs := a.newZone(t, demoToken(t, "tailspin-all"), "Theirs")
	gone := a.newZone(t, acme, "Gone")
	if r := a.zoneReq(http.MethodDelete, "/api/v2/zones/"+gone, acme, ""); r.status != http.StatusNoContent {
		t.Fatalf("zone delete: %d %s", r.status, r.raw)
	}
	rule := func(name, zones string) string {
		return `{"type":"zone_in","name":"` + name + `","zone_trigger":"in","zones":` + zones + `}`
	}
	report := func(name, zones string) string {
		return `{"name":"` + name + `","type":"general","zone_ids":` + zones + `}`
	}
	ev := a.write(http.MethodPost, "/api/v2/events", rule("Own zone", `["`+own+`"]`), acme)
	if ev.status != http.StatusCreated {
		t.Fatalf("rule with its own zone: %d %s", ev.status, ev.raw)
	}
	evID := fmt.Sprint(int64(ev.data(t)["event_id"].(float64)))
	rep := a.write(http.MethodPost, "/api/v2/reports", report("Own zone", `["`+own+`"]`), acme)
	if rep.status != http.StatusCreated {
		t.Fatalf("report with its own zone: %d %s", rep.status, rep.raw)
	}
	repID := fmt.Sprint(int64(rep.data(t)["report_id"].(float64)))

	rows := func() int {
		return a.count(t, "SELECT count(*) FROM events") + a.count(t, "SELECT count(*) FROM reports") + a.count(t, "SELECT count(*) FROM audit_events")
	}
	before := rows()
	var answers []string
	for _, bad := range []string{theirs, "999999999", gone, "0" + own, "depot"} {
		list := `["` + own + `","` + bad + `"]`
		for _, c := range []struct{ method, path, body, field string }{
			{http.MethodPost, "/api/v2/events", rule("Bad zone", list), "zones"},
			{http.MethodPatch, "/api/v2/events/" + evID, `{"zones":` + list + `}`, "zones"},
			{http.MethodPost, "/api/v2/reports", report("Bad zone", list), "zone_ids"},
			{http.MethodPatch, "/api/v2/reports/" + repID, `{"zone_ids":` + list + `}`, "zone_ids"},
		} {
			r := a.write(c.method, c.path, c.body, acme)
			if r.status != http.StatusBadRequest || r.errorCode(t) != "VALIDATION_FAILED" || !strings.Contains(string(r.raw), `"`+c.field+`"`) {
				t.Fatalf("%s %s naming %s: %d %s", c.method, c.path, bad, r.status, r.raw)
			}
			if bad == theirs || bad == "999999999" {
				answers = append(answers, c.method+c.path+zoneIDsReqID.ReplaceAllString(string(r.raw), ""))
			}
		}
	}
	// another tenant's zone and an absent one: the same bytes
	for i := 0; i < 4; i++ {
		if answers[i] != answers[i+4] {
			t.Errorf("another tenant's zone and an absent one differ:\n%s\n%s", answers[i], answers[i+4])
		}
	}
	if after := rows(); after != before {
		t.Fatalf("refused writes wrote: %d rows and audit events, %d before", after, before)
	}
	// a row imported with a dangling id stays readable
	a.exec(t, "UPDATE events SET zones = '{999999999}' WHERE event_id = ?", evID)
	if r := a.get("/api/v2/events/"+evID, acme); r.status != http.StatusOK {
		t.Fatalf("rule with a dangling zone: %d %s", r.status, r.raw)
	}
}

// TestZoneDeleteRacesRuleCreate: a DELETE /zones/{id} and a POST /events
// naming that zone, at once, end either with the rule (201) and the zone
// kept (409), or with the zone deleted (204) and the rule refused (400):
// never a 5xx, never a rule naming a deleted zone.
func TestZoneDeleteRacesRuleCreate(t *testing.T) {
	a := newTestAPI(t)
	acme := demoToken(t, "acme-all")
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = a.newZone(t, acme, fmt.Sprintf("Race %d", i))
	}
	var wg sync.WaitGroup
	created, deleted := make([]int, n), make([]int, n)
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			created[i] = a.write(http.MethodPost, "/api/v2/events", fmt.Sprintf(`{"type":"zone_in","name":"Race %d","zone_trigger":"in","zones":[%q]}`, i, id), acme).status
		}()
		go func() {
			defer wg.Done()
			deleted[i] = a.zoneReq(http.MethodDelete, "/api/v2/zones/"+id, acme, "").status
		}()
	}
	wg.Wait()
	for i := range ids {
		ok := (created[i] == http.StatusCreated && deleted[i] == http.StatusConflict) ||
			(created[i] == http.StatusBadRequest && deleted[i] == http.StatusNoContent)
		if !ok {
			t.Errorf("zone %s: rule create %d, zone delete %d", ids[i], created[i], deleted[i])
		}
	}
	if d := a.count(t, `SELECT count(*) FROM events e, unnest(e.zones) z
		WHERE z ~ '^[1-9][0-9]*$' AND NOT EXISTS (SELECT 1 FROM zones WHERE id = z::bigint AND account_id = e.account_id)
		AND e.name LIKE 'Race %'`); d != 0 {
		t.Fatalf("%d rules name a deleted zone", d)
	}
}
