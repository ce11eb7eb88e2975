package rules

import (
	"strings"
	"testing"
)

// TestZoneTransitions: zone_in fires on entering one of its zones, once,
// and re-arms on leaving; zone_out the reverse; the first positioned
// reading only sets the state; a reading without a position changes
// nothing; zones the rule does not name count for nothing; a rule with a
// missing zone never fires.
func TestZoneTransitions(t *testing.T) {
	pos := func(v float64) *float64 { return &v }
	type rd struct {
		in     []string // the zones containing the position; nil with nopos
		nopos  bool
		expect string // the value fired, "" for none
	}
	for _, tc := range []struct {
		name string
		rule Rule
		rds  []rd
	}{
		{"zone_in", Rule{Type: ZoneIn, Zones: []string{"4", "5"}}, []rd{
			{in: []string{"4"}},                     // first: only the state
			{in: nil},                               // left: re-armed
			{in: []string{"9"}},                     // a zone it does not name
			{in: []string{"5"}, expect: "5"},        // entered
			{in: []string{"4", "5"}},                // still in
			{nopos: true},                           // no position: nothing
			{in: []string{"4"}},                     // still in
			{in: nil},                               // left
			{nopos: true},                           // nothing
			{in: []string{"4", "5"}, expect: "4,5"}, // entered again
		}},
		{"zone_out", Rule{Type: ZoneOut, Zones: []string{"4"}}, []rd{
			{in: nil},                        // first: outside, only the state
			{in: []string{"4"}},              // entered: nothing
			{in: []string{"4"}},              // stayed
			{in: nil, expect: "4"},           // left
			{in: nil},                        // stayed out
			{in: []string{"4"}},              // back
			{in: []string{"7"}, expect: "4"}, // left for another zone
		}},
		{"missing_zone_never", Rule{Type: ZoneIn, Zones: []string{"4"}, ZonesMissing: []string{"4"}}, []rd{
			{in: nil}, {in: []string{"4"}}, {in: nil}, {in: []string{"4"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rule.ID, tc.rule.Name = 3, "Z"
			var st State
			for i, r := range tc.rds {
				rdg := Reading{Time: at(i)}
				if !r.nopos {
					rdg.Lat, rdg.Lon = pos(1.5), pos(-2)
					rdg.InZones = map[string]bool{}
					for _, z := range r.in {
						rdg.InZones[z] = true
					}
				}
				var fired []Fired
				st, fired = Evaluate([]Rule{tc.rule}, nil, st, rdg)
				got := ""
				if len(fired) == 1 {
					got = fired[0].Value
					if !strings.Contains(fired[0].Message, "1.5,-2") || fired[0].Type != tc.rule.Type {
						t.Errorf("reading %d: %+v", i, fired[0])
					}
				}
				if len(fired) > 1 || got != r.expect {
					t.Fatalf("reading %d: fired %+v, want %q", i, fired, r.expect)
				}
			}
		})
	}
}
