package storage

import (
	"slices"
	"testing"

	"github.com/fleetapi/fleetapi/rules"
)

// TestEventRule: a stored rule reaches the rules package with its fields;
// a day_time bound that is not a string arrives as its JSON text (never a
// valid "HH:MM"), an absent one as "".
func TestEventRule(t *testing.T) {
	ev := Event{EventID: 7, Type: "overspeed", Name: "Fast", CheckedValue: "90", WeekDays: StringList{"mon", "sun"},
		DayTime: JSONObject{"from": "22:00", "to": 600.0, "note": "x"}}
	r := ev.Rule()
	if r.ID != 7 || r.Type != "overspeed" || r.Name != "Fast" || r.CheckedValue != "90" || !slices.Equal(r.WeekDays, []string{"mon", "sun"}) {
		t.Fatalf("rule %+v", r)
	}
	if r.DayTime != (rules.DayTime{From: "22:00", To: "600"}) {
		t.Fatalf("day_time %+v", r.DayTime)
	}
	if d := (Event{DayTime: JSONObject{"to": nil}}).Rule().DayTime; d != (rules.DayTime{To: "null"}) {
		t.Fatalf("null bound: %+v", d)
	}
	if d := (Event{}).Rule().DayTime; d != (rules.DayTime{}) {
		t.Fatalf("no day_time: %+v", d)
	}
}
