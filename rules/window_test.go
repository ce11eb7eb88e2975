package rules

import (
	"testing"
	"time"
)

// TestWindowEdges states the window's edges: both ends inclusive at the
// minute, from > to spans midnight, week_days read on the local day of the
// time itself.
func TestWindowEdges(t *testing.T) {
	day := func(hh, mm int) time.Time { return time.Date(2026, 3, 2, hh, mm, 30, 0, time.UTC) } // a Monday
	cases := []struct {
		name  string
		days  []string
		dt    DayTime
		t     time.Time
		admit bool
	}{
		{"all_day", nil, DayTime{}, day(3, 0), true},
		{"before", nil, DayTime{From: "08:00", To: "18:00"}, day(7, 59), false},
		{"from_inclusive", nil, DayTime{From: "08:00", To: "18:00"}, day(8, 0), true},
		{"to_inclusive_whole_minute", nil, DayTime{From: "08:00", To: "18:00"}, day(18, 0), true},
		{"after", nil, DayTime{From: "08:00", To: "18:00"}, day(18, 1), false},
		{"one_minute", nil, DayTime{From: "12:00", To: "12:00"}, day(12, 0), true},
		{"one_minute_after", nil, DayTime{From: "12:00", To: "12:00"}, day(12, 1), false},
		{"midnight_before", nil, DayTime{From: "22:00", To: "06:00"}, day(21, 59), false},
		{"midnight_from", nil, DayTime{From: "22:00", To: "06:00"}, day(22, 0), true},
		{"midnight_last_minute", nil, DayTime{From: "22:00", To: "06:00"}, day(23, 59), true},
		{"midnight_zero", nil, DayTime{From: "22:00", To: "06:00"}, day(0, 0), true},
		{"midnight_to", nil, DayTime{From: "22:00", To: "06:00"}, day(6, 0), true},
		{"midnight_after", nil, DayTime{From: "22:00", To: "06:00"}, day(6, 1), false},
		{"midnight_noon", nil, DayTime{From: "22:00", To: "06:00"}, day(12, 0), false},
		{"monday", []string{"mon"}, DayTime{}, day(12, 0), true},
		{"not_tuesday", []string{"tue", "sun"}, DayTime{}, day(12, 0), false},
		// After midnight the day is the new day's: mon 22:00-06:00 does not
		// admit Tuesday 01:00.
		{"midnight_next_day", []string{"mon"}, DayTime{From: "22:00", To: "06:00"}, day(25, 0), false},
		{"midnight_same_day_morning", []string{"mon"}, DayTime{From: "22:00", To: "06:00"}, day(1, 0), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, reason := parseWindow(c.days, c.dt)
			if reason != "" {
				t.Fatal(reason)
			}
			if got := w.admits(localTime(c.t, time.UTC)); got != c.admit {
				t.Errorf("%v: %v, want %v", c.t, got, c.admit)
			}
		})
	}
}

// TestWindowZone: week_days and day_time are read in the account's zone,
// also on the days of a DST change (Europe/Berlin: 2026-03-29 02:00 CET
// becomes 03:00 CEST; 2026-10-25 03:00 CEST becomes 02:00 CET).
func TestWindowZone(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	ny := zone(t, "America/New_York")
	utc := func(mo time.Month, d, hh, mm int) time.Time { return time.Date(2026, mo, d, hh, mm, 0, 0, time.UTC) }
	cases := []struct {
		name  string
		loc   *time.Location
		days  []string
		dt    DayTime
		t     time.Time
		admit bool
	}{
		// Sunday 23:30 UTC is Monday 00:30 in Berlin.
		{"berlin_monday", berlin, []string{"mon"}, DayTime{}, utc(3, 1, 23, 30), true},
		{"utc_sunday", time.UTC, []string{"mon"}, DayTime{}, utc(3, 1, 23, 30), false},
		// Monday 03:00 UTC is Sunday 22:00 in New York (EST).
		{"new_york_sunday", ny, []string{"sun"}, DayTime{From: "22:00", To: "22:00"}, utc(3, 2, 3, 0), true},
		// Spring forward: 02:00-02:59 does not exist on the wall clock.
		{"spring_01_59", berlin, nil, DayTime{From: "02:00", To: "02:59"}, utc(3, 29, 0, 59), false},
		{"spring_03_00", berlin, nil, DayTime{From: "02:00", To: "02:59"}, utc(3, 29, 1, 0), false},
		{"spring_03_00_admitted", berlin, nil, DayTime{From: "03:00", To: "03:10"}, utc(3, 29, 1, 0), true},
		{"spring_window_after_the_gap", berlin, nil, DayTime{From: "08:00", To: "09:00"}, utc(3, 29, 6, 0), true},
		{"spring_window_after_the_gap_before", berlin, nil, DayTime{From: "08:00", To: "09:00"}, utc(3, 29, 5, 59), false},
		// Fall back: 02:30 happens twice and both are in 02:00-02:59.
		{"fall_first_02_30", berlin, nil, DayTime{From: "02:00", To: "02:59"}, utc(10, 25, 0, 30), true},
		{"fall_second_02_30", berlin, nil, DayTime{From: "02:00", To: "02:59"}, utc(10, 25, 1, 30), true},
		{"fall_03_00", berlin, nil, DayTime{From: "02:00", To: "02:59"}, utc(10, 25, 2, 0), false},
		{"fall_sunday", berlin, []string{"sun"}, DayTime{From: "00:00", To: "00:30"}, utc(10, 24, 22, 15), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, reason := parseWindow(c.days, c.dt)
			if reason != "" {
				t.Fatal(reason)
			}
			if got := w.admits(localTime(c.t, c.loc)); got != c.admit {
				t.Errorf("%v in %v: %v, want %v", c.t, c.loc, got, c.admit)
			}
		})
	}
}

// TestEvaluateWindow: outside its window a rule does not fire, and a
// transition outside it is consumed (the condition still updates), so it
// does not fire when the window opens while the condition holds; the next
// transition inside fires.
func TestEvaluateWindow(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	rule := Rule{ID: 1, Name: "Night", Type: Overspeed, CheckedValue: "90", DayTime: DayTime{From: "22:00", To: "06:00"}}
	// t0 is 12:00 UTC, 13:00 in Berlin.
	readings := []Reading{
		{Time: at(0), Speed: num(100)},         // 13:00: outside, consumed
		{Time: at(9 * 60), Speed: num(120)},    // 22:00: holds since 13:00: no fire
		{Time: at(9*60 + 1), Speed: num(50)},   // re-armed
		{Time: at(9*60 + 2), Speed: num(95)},   // 22:02: fires
		{Time: at(11 * 60), Speed: num(50)},    // 00:00
		{Time: at(11*60 + 1), Speed: num(99)},  // 00:01: fires (after midnight)
		{Time: at(17 * 60), Speed: num(10)},    // 06:00
		{Time: at(17 * 60), Speed: num(100)},   // the same time again: not evaluated
		{Time: at(17*60 + 1), Speed: num(100)}, // 06:01: outside
	}
	got, _ := run(t, berlin, rule, readings)
	want := []string{"", "", "", "95", "", "99", "", "", ""}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reading %d (%v): fired %q, want %q", i, readings[i].Time.In(berlin), got[i], want[i])
		}
	}
	// Stopped: the minutes pass outside the window; the rule does not fire
	// later in it while the device stays stopped.
	rule = Rule{ID: 2, Type: Stopped, CheckedValue: "10", WeekDays: []string{"tue"}}
	got, _ = run(t, time.UTC, rule, []Reading{
		{Time: at(0), Speed: num(0)},
		{Time: at(11), Speed: num(0)},      // Monday: consumed
		{Time: at(12 * 60), Speed: num(0)}, // Tuesday 00:00: no fire
		{Time: at(12*60 + 1), Speed: num(1)},
		{Time: at(12*60 + 2), Speed: num(0)},
		{Time: at(12*60 + 12), Speed: num(0)},
	})
	if want := []string{"", "", "", "", "", "10"}; !equal(got, want) {
		t.Errorf("stopped fired %q, want %q", got, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
