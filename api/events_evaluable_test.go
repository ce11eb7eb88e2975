package api_test

import (
	"fmt"
	"testing"
)

// TestEventsEvaluable: GET /events/{id} and GET /events report each rule's
// evaluable and reason as rules.Check judges it (docs/design.md §14): an
// overspeed of "90" is evaluable with no reason; an overspeed of "abc", a
// malformed day_time and a zone_in (kept, not evaluated) are not, each
// with a reason. The fields are computed: no filter and no sort takes
// them.
func TestEventsEvaluable(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	a.exec(t, `INSERT INTO events (account_id, name, type, checked_value, active, day_time, zones) SELECT id, v.name, v.type, v.checked, true, v.day_time::jsonb, v.zones::text[]
		FROM accounts, (VALUES ('ev-ok', 'overspeed', '90', '{}', '{}'), ('ev-abc', 'overspeed', 'abc', '{}', '{}'),
			('ev-zone', 'zone_in', '', '{}', '{"depot"}'), ('ev-daytime', 'overspeed', '90', '{"from": 600, "to": "18:00"}', '{}'))
			AS v(name, type, checked, day_time, zones)
		WHERE username = 'acme'`)
	want := map[string]bool{"ev-ok": true, "ev-abc": false, "ev-zone": false, "ev-daytime": false}
	ids := map[string]int64{}
	list := a.get("/api/v2/events?per_page=100", tok)
	if list.status != 200 {
		t.Fatalf("list: %d %s", list.status, list.raw)
	}
	seen := 0
	for _, item := range list.body["data"].([]any) {
		m := item.(map[string]any)
		ev, ok := m["evaluable"].(bool)
		reason, rok := m["reason"].(string)
		if !ok || !rok {
			t.Fatalf("list item without evaluable and reason: %v", m)
		}
		name := m["name"].(string)
		w, mine := want[name]
		if !mine {
			continue
		}
		seen++
		ids[name] = int64(m["event_id"].(float64))
		if ev != w || (w && reason != "") || (!w && reason == "") {
			t.Errorf("list %s: evaluable %v reason %q, want evaluable %v with a reason only when not", name, ev, reason, w)
		}
	}
	if seen != len(want) {
		t.Fatalf("the list shows %d of the %d rules: %s", seen, len(want), list.raw)
	}
	for name, w := range want {
		r := a.get(fmt.Sprintf("/api/v2/events/%d", ids[name]), tok)
		d := r.data(t)
		if r.status != 200 || d["evaluable"] != w || (w && d["reason"] != "") || (!w && d["reason"] == "") {
			t.Errorf("GET /events/{id} %s: %d evaluable %v reason %q, want evaluable %v", name, r.status, d["evaluable"], d["reason"], w)
		}
	}
	for _, q := range []string{"evaluable=true", "reason=x", "sort=evaluable", "sort=reason"} {
		if r := a.get("/api/v2/events?"+q, tok); r.status != 400 {
			t.Errorf("GET /events?%s: %d, want 400 (computed fields neither filter nor sort): %s", q, r.status, r.raw)
		}
	}
}
