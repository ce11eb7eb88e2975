package rules

import (
	"reflect"
	"testing"
)

// TestEvaluateTypes states each type's transitions on a sequence of
// readings: what fires, that it does not fire again while the condition
// holds, what re-arms it, and what an unreported field does.
func TestEvaluateTypes(t *testing.T) {
	type rd struct {
		min      int
		speed    *float64
		ignition *bool
		attrs    attrs
		fires    string // the value that fires; "" none
	}
	cases := []struct {
		name     string
		rule     Rule
		readings []rd
	}{
		{"overspeed", Rule{Type: Overspeed, CheckedValue: "90"}, []rd{
			{min: 0, speed: num(80)},
			{min: 1, speed: num(97.5), fires: "97.5"},
			{min: 2, speed: num(100)}, // holds: no repeat
			{min: 3},                  // no speed: unchanged
			{min: 4, speed: num(95)},  // still fired
			{min: 5, speed: num(90)},  // not above: re-armed
			{min: 6, speed: num(91), fires: "91"},
		}},
		{"overspeed_first_reading_fires", Rule{Type: Overspeed, CheckedValue: "90"}, []rd{
			{min: 0, speed: num(120), fires: "120"},
		}},
		{"ignition_on", Rule{Type: IgnitionOn}, []rd{
			{min: 0, ignition: flag(true)}, // the first report is no change
			{min: 1, ignition: flag(false)},
			{min: 2, ignition: flag(true), fires: "true"},
			{min: 3, ignition: flag(true)},
			{min: 4}, // unreported: still true
			{min: 5, ignition: flag(true)},
			{min: 6, ignition: flag(false)},
			{min: 7}, // unreported: still false
			{min: 8, ignition: flag(true), fires: "true"},
		}},
		{"ignition_off", Rule{Type: IgnitionOff}, []rd{
			{min: 0, ignition: flag(false)},
			{min: 1, ignition: flag(true)},
			{min: 2, ignition: flag(false), fires: "false"},
			{min: 3, ignition: flag(false)},
		}},
		{"sos", Rule{Type: SOS}, []rd{
			{min: 0, attrs: attrs{}},
			{min: 1, attrs: attrs{"sos": false}},
			{min: 2, attrs: attrs{"sos": true}, fires: "true"},
			{min: 3, attrs: attrs{"sos": 1.0}}, // holds
			{min: 4, attrs: attrs{}},           // unreported: unchanged
			{min: 5, attrs: attrs{"sos": "0"}}, // ends
			{min: 6, attrs: attrs{"sos": "TRUE"}, fires: "TRUE"},
			{min: 7, attrs: attrs{"sos": 0.0}},
			{min: 8, attrs: attrs{"sos": "1"}, fires: "1"},
			{min: 9, attrs: attrs{"sos": "yes"}}, // any other string is false
			{min: 10, attrs: attrs{"sos": 2.5}, fires: "2.5"},
			{min: 11, attrs: attrs{"sos": []any{}}}, // neither: unchanged
			{min: 12, attrs: attrs{"sos": ""}},
			{min: 13, attrs: attrs{"sos": "True"}, fires: "True"},
		}},
		{"sos_first_reading_fires", Rule{Type: SOS}, []rd{
			{min: 0, attrs: attrs{"sos": true}, fires: "true"},
		}},
		{"door_open", Rule{Type: DoorOpen}, []rd{
			{min: 0, attrs: attrs{"door": 0.0}},
			{min: 1, attrs: attrs{"door": 1.0, "sos": false}, fires: "1"},
			{min: 2, attrs: attrs{"sos": true}},
			{min: 3, attrs: attrs{"door": false}},
			{min: 4, attrs: attrs{"door": true}, fires: "true"},
		}},
		{"param_numeric", Rule{Type: Param, CheckedValue: "temp1 > 30"}, []rd{
			{min: 0, attrs: attrs{"temp1": 25.0}},
			{min: 1, attrs: attrs{"temp1": 31.5}, fires: "31.5"},
			{min: 2, attrs: attrs{"temp1": "40"}},
			{min: 3, attrs: attrs{}}, // missing: not true, and not an end
			{min: 4, attrs: attrs{"temp1": 30.0}},
			{min: 5, attrs: attrs{"temp1": "31"}, fires: "31"},
		}},
		{"param_missing_never_fires", Rule{Type: Param, CheckedValue: "status != idle"}, []rd{
			{min: 0},
			{min: 1, attrs: attrs{"other": "x"}},
			{min: 2, attrs: attrs{"status": "idle"}},
			{min: 3, attrs: attrs{"status": "moving"}, fires: "moving"},
		}},
		{"param_string", Rule{Type: Param, CheckedValue: `mode = "eco"`}, []rd{
			{min: 0, attrs: attrs{"mode": "sport"}},
			{min: 1, attrs: attrs{"mode": "eco"}, fires: "eco"},
			{min: 2, attrs: attrs{"mode": "ECO"}},
			{min: 3, attrs: attrs{"mode": "eco"}, fires: "eco"},
		}},
		{"fuel_drop", Rule{Type: FuelDrop, CheckedValue: "20"}, []rd{
			{min: 0, attrs: attrs{"fuel": 100.0}}, // no previous fuel
			{min: 1, attrs: attrs{"fuel": 90.0}},
			{min: 2, attrs: attrs{"fuel": 70.0}, fires: "20"},
			{min: 3, attrs: attrs{"fuel": 40.0}}, // still falling fast: once
			{min: 4, attrs: attrs{}},             // unreported: unchanged
			{min: 5, attrs: attrs{"fuel": 45.0}}, // rises: re-armed
			{min: 6, attrs: attrs{"fuel": "20"}, fires: "25"},
			{min: 7, attrs: attrs{"fuel": "empty"}}, // not a number: unreported
			{min: 8, attrs: attrs{"fuel": 5.0}},     // 15 below 20: re-armed
			{min: 9, attrs: attrs{"fuel": 60.0}},
			{min: 10, attrs: attrs{"fuel": 30.0}, fires: "30"},
		}},
		{"fuel_drop_consecutive_is_previous_report", Rule{Type: FuelDrop, CheckedValue: "20"}, []rd{
			{min: 0, attrs: attrs{"fuel": 100.0}},
			{min: 1, speed: num(10)},
			{min: 2, attrs: attrs{"fuel": 75.0}, fires: "25"},
		}},
		{"fuel_drop_fractions", Rule{Type: FuelDrop, CheckedValue: "0.2"}, []rd{
			{min: 0, attrs: attrs{"fuel": 0.3}},
			{min: 1, attrs: attrs{"fuel": 0.1}, fires: "0.2"}, // not 0.19999999999999998
			{min: 2, attrs: attrs{"fuel": 10.3}},
			{min: 3, attrs: attrs{"fuel": 10.1}, fires: "0.2"},
		}},
		{"fuel_drop_small_steps_never", Rule{Type: FuelDrop, CheckedValue: "20"}, []rd{
			{min: 0, attrs: attrs{"fuel": 100.0}},
			{min: 1, attrs: attrs{"fuel": 85.0}},
			{min: 2, attrs: attrs{"fuel": 70.0}},
			{min: 3, attrs: attrs{"fuel": 55.0}},
		}},
		{"stopped", Rule{Type: Stopped, CheckedValue: "10"}, []rd{
			{min: 0, speed: num(5)},
			{min: 1, speed: num(0)}, // since minute 1
			{min: 5, speed: num(0)},
			{min: 10, speed: num(0)},
			{min: 11, speed: num(0), fires: "10"},
			{min: 20, speed: num(0)},
			{min: 21},                // no speed: unchanged
			{min: 22, speed: num(3)}, // moves: re-armed
			{min: 23, speed: num(0)}, // since minute 23
			{min: 40, speed: num(0), fires: "17"},
		}},
		{"stopped_unreported_speed_does_not_start", Rule{Type: Stopped, CheckedValue: "10"}, []rd{
			{min: 0},
			{min: 20, speed: num(0)},
			{min: 29, speed: num(0)},
			{min: 30, speed: num(0), fires: "10"},
		}},
		{"connection_no_never_from_a_reading", Rule{Type: ConnectionNo, CheckedValue: "1"}, []rd{
			{min: 0}, {min: 100}, {min: 1000},
		}},
		{"zone_in_no_zone_never", Rule{Type: ZoneIn, CheckedValue: "1"}, []rd{{min: 0, speed: num(1)}}},
		{"malformed_never", Rule{Type: Overspeed, CheckedValue: "ninety"}, []rd{{min: 0, speed: num(500)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.rule.ID, c.rule.Name = 7, "R"
			var readings []Reading
			var want []string
			for _, r := range c.readings {
				readings = append(readings, Reading{Time: at(r.min), Speed: r.speed, Ignition: r.ignition, Attributes: r.attrs})
				want = append(want, r.fires)
			}
			got, _ := run(t, nil, c.rule, readings)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("fired %q\n want %q", got, want)
			}
		})
	}
}

// TestEvaluateMessages states the messages for people.
func TestEvaluateMessages(t *testing.T) {
	cases := []struct {
		rule  Rule
		prev  Reading
		r     Reading
		value string
		msg   string
	}{
		{Rule{Type: Overspeed, CheckedValue: "90", Name: "Highway"}, Reading{}, Reading{Speed: num(97.5)},
			"97.5", `Overspeed: 97.5 km/h > 90 (rule "Highway")`},
		{Rule{Type: IgnitionOn, Name: "On"}, Reading{Ignition: flag(false)}, Reading{Ignition: flag(true)},
			"true", `Ignition on (rule "On")`},
		{Rule{Type: IgnitionOff, Name: "Off"}, Reading{Ignition: flag(true)}, Reading{Ignition: flag(false)},
			"false", `Ignition off (rule "Off")`},
		{Rule{Type: SOS, Name: "Help"}, Reading{}, Reading{Attributes: attrs{"sos": 1.0}},
			"1", `SOS: sos is 1 (rule "Help")`},
		{Rule{Type: DoorOpen, Name: "Door"}, Reading{}, Reading{Attributes: attrs{"door": true}},
			"true", `Door open: door is true (rule "Door")`},
		{Rule{Type: Param, CheckedValue: "temp1 > 30", Name: "Hot"}, Reading{}, Reading{Attributes: attrs{"temp1": 31.5}},
			"31.5", `Parameter: temp1 is 31.5, > 30 (rule "Hot")`},
		{Rule{Type: FuelDrop, CheckedValue: "20", Name: "Theft"}, Reading{Attributes: attrs{"fuel": 80.0}}, Reading{Attributes: attrs{"fuel": 55.0}},
			"25", `Fuel drop: 25 (from 80 to 55) ≥ 20 (rule "Theft")`},
		{Rule{Type: Stopped, CheckedValue: "0.5", Name: "Parked"}, Reading{Speed: num(0)}, Reading{Speed: num(0)},
			"1", `Stopped: speed 0 for 1 min (at least 0.5) (rule "Parked")`},
	}
	for _, c := range cases {
		t.Run(c.rule.Type, func(t *testing.T) {
			c.rule.ID = 1
			c.prev.Time, c.r.Time = at(0), at(1)
			st, fired := Evaluate([]Rule{c.rule}, nil, State{}, c.prev)
			if len(fired) != 0 {
				t.Fatalf("previous reading fired %+v", fired)
			}
			_, fired = Evaluate([]Rule{c.rule}, nil, st, c.r)
			if len(fired) != 1 || fired[0].Value != c.value || fired[0].Message != c.msg {
				t.Fatalf("fired %+v\nwant value %q message %q", fired, c.value, c.msg)
			}
		})
	}
}

// TestEvaluateRuleOrderAndStale: several rules fire in rule order; a
// reading not newer than the previous one is not evaluated; the input
// state is not modified; the state of rules no longer given is dropped.
func TestEvaluateRuleOrderAndStale(t *testing.T) {
	rs := []Rule{
		{ID: 3, Type: SOS},
		{ID: 1, Type: Overspeed, CheckedValue: "50"},
		{ID: 2, Type: ZoneIn},
		{ID: 4, Type: Stopped, CheckedValue: "5"},
	}
	st, fired := Evaluate(rs, nil, State{}, Reading{Time: at(0), Speed: num(60), Attributes: attrs{"sos": true}})
	if len(fired) != 2 || fired[0].RuleID != 3 || fired[1].RuleID != 1 {
		t.Fatalf("fired %+v", fired)
	}
	if len(st.Rules) != 2 || !st.Rules["3"].Fired || !st.Rules["1"].Fired {
		t.Fatalf("state %+v", st.Rules)
	}
	before := stateJSON(t, st)
	for _, old := range []int{0, -1} {
		same, fired := Evaluate(rs, nil, st, Reading{Time: at(old), Speed: num(0), Attributes: attrs{"sos": false}})
		if len(fired) != 0 || !reflect.DeepEqual(same, st) {
			t.Errorf("a reading at minute %d was evaluated: %+v %+v", old, same, fired)
		}
	}
	next, _ := Evaluate(rs[:1], nil, st, Reading{Time: at(1), Speed: num(0)})
	if after := stateJSON(t, st); after != before {
		t.Errorf("Evaluate modified its input state:\n%s\n%s", before, after)
	}
	if _, ok := next.Rules["1"]; ok || len(next.Rules) != 1 {
		t.Errorf("the state of a rule not given was kept: %+v", next.Rules)
	}
}
