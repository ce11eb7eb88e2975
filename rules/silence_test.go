package rules

import (
	"testing"
	"time"
)

// TestSilence: connection_no fires from the clock once its minutes have
// passed since the last reading, once per silence; a reading re-arms it; its
// window is read on the clock's time, and a silence that passed its minutes
// outside the window fires at the first call inside it.
func TestSilence(t *testing.T) {
	rule := Rule{ID: 9, Name: "Lost", Type: ConnectionNo, CheckedValue: "60"}
	other := Rule{ID: 1, Type: Overspeed, CheckedValue: "10"}
	rs := []Rule{other, rule}
	st, _ := Evaluate(rs, nil, State{}, Reading{Time: at(0), Speed: num(50)})

	if _, fired := Silence(rs, nil, st, at(0), at(59)); len(fired) != 0 {
		t.Fatalf("59 minutes fired %+v", fired)
	}
	st, fired := Silence(rs, nil, st, at(0), at(60))
	if len(fired) != 1 {
		t.Fatalf("60 minutes fired %+v", fired)
	}
	f := fired[0]
	if f.RuleID != 9 || f.Type != ConnectionNo || !f.Time.Equal(at(60)) || f.Value != "60" ||
		f.Message != `No connection: no reading for 60 min (at least 60) (rule "Lost")` {
		t.Errorf("fired %+v", f)
	}
	if !st.Rules["1"].Fired {
		t.Errorf("Silence dropped another rule's state: %+v", st.Rules)
	}
	if _, fired := Silence(rs, nil, st, at(0), at(600)); len(fired) != 0 {
		t.Fatalf("the same silence fired again: %+v", fired)
	}
	st, _ = Evaluate(rs, nil, st, Reading{Time: at(601)})
	if _, ok := st.Rules["9"]; ok {
		t.Fatalf("a reading did not re-arm: %+v", st.Rules)
	}
	if _, fired := Silence(rs, nil, st, at(601), at(660)); len(fired) != 0 {
		t.Fatalf("59 minutes fired %+v", fired)
	}
	if _, fired := Silence(rs, nil, st, at(601), at(700)); len(fired) != 1 || fired[0].Value != "99" {
		t.Fatalf("the next silence: %+v", fired)
	}
	if _, fired := Silence(rs, nil, State{}, time.Time{}, at(700)); len(fired) != 0 {
		t.Fatalf("a device that never reported: %+v", fired)
	}
	bad := Rule{ID: 10, Type: ConnectionNo, CheckedValue: "soon"}
	if _, fired := Silence([]Rule{bad}, nil, State{}, at(0), at(100000)); len(fired) != 0 {
		t.Fatalf("a malformed rule fired %+v", fired)
	}

	// In New York (EST in March before the 8th), 08:00-18:00 on weekdays:
	// the last reading is Monday 17:30 local (22:30 UTC).
	ny := zone(t, "America/New_York")
	office := Rule{ID: 11, Type: ConnectionNo, CheckedValue: "60", WeekDays: []string{"mon", "tue", "wed", "thu", "fri"},
		DayTime: DayTime{From: "08:00", To: "18:00"}}
	last := time.Date(2026, 3, 2, 22, 30, 0, 0, time.UTC)
	st = State{}
	for _, c := range []struct {
		now   time.Time
		value string
	}{
		{last.Add(75 * time.Minute), ""},                 // 18:45: outside
		{last.Add(14*time.Hour + 29*time.Minute), ""},    // Tuesday 07:59
		{last.Add(14*time.Hour + 30*time.Minute), "870"}, // Tuesday 08:00: fires
		{last.Add(15 * time.Hour), ""},                   // once
		{last.Add(4*24*time.Hour + 14*time.Hour), ""},    // Saturday: still the same silence
	} {
		var fired []Fired
		st, fired = Silence([]Rule{office}, ny, st, last, c.now)
		got := ""
		if len(fired) == 1 {
			got = fired[0].Value
		}
		if got != c.value || len(fired) > 1 {
			t.Errorf("%v: fired %+v, want %q", c.now.In(ny), fired, c.value)
		}
	}
}
