package rules

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones of the tests on a machine without them
)

// t0 is a Monday, 12:00 UTC.
var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// at is t0 plus m minutes.
func at(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

func num(v float64) *float64 { return &v }
func flag(b bool) *bool      { return &b }

// attrs is a reading's attributes.
type attrs = map[string]any

// zone loads an IANA zone or fails the test.
func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// run evaluates readings in order from the zero state with one rule and
// returns, per reading, the value that fired ("" for none) and the final
// state.
func run(t *testing.T, loc *time.Location, rule Rule, readings []Reading) ([]string, State) {
	t.Helper()
	var st State
	got := make([]string, len(readings))
	for i, r := range readings {
		var fired []Fired
		st, fired = Evaluate([]Rule{rule}, loc, st, r)
		switch len(fired) {
		case 0:
		case 1:
			f := fired[0]
			if f.RuleID != rule.ID || f.Type != rule.Type || !f.Time.Equal(r.Time) || f.Message == "" || f.Value == "" {
				t.Errorf("reading %d: fired %+v", i, f)
			}
			got[i] = f.Value
		default:
			t.Fatalf("reading %d: one rule fired %d times: %+v", i, len(fired), fired)
		}
	}
	return got, st
}
