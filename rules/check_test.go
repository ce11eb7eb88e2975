package rules

import (
	"strings"
	"testing"
)

// TestCheck states, per type, which rules are evaluable and the reason of
// those that are not.
func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		rule   Rule
		reason string // "" evaluable; else a part of the reason
	}{
		{"overspeed", Rule{Type: Overspeed, CheckedValue: "90"}, ""},
		{"overspeed_fraction_space", Rule{Type: Overspeed, CheckedValue: " 90.5 "}, ""},
		{"overspeed_exponent", Rule{Type: Overspeed, CheckedValue: "1e2"}, ""},
		{"overspeed_word", Rule{Type: Overspeed, CheckedValue: "abc"}, `checked_value "abc" is not a number of km/h`},
		{"overspeed_empty", Rule{Type: Overspeed}, `checked_value "" is not a number of km/h`},
		{"overspeed_zero", Rule{Type: Overspeed, CheckedValue: "0"}, "must be more than 0 km/h"},
		{"overspeed_negative", Rule{Type: Overspeed, CheckedValue: "-5"}, "must be more than 0"},
		{"overspeed_hex", Rule{Type: Overspeed, CheckedValue: "0x10"}, "is not a number"},
		{"overspeed_inf", Rule{Type: Overspeed, CheckedValue: "Inf"}, "is not a number"},
		{"overspeed_nan", Rule{Type: Overspeed, CheckedValue: "NaN"}, "is not a number"},
		{"overspeed_huge", Rule{Type: Overspeed, CheckedValue: "1e400"}, "is not a number"},
		{"overspeed_underscore", Rule{Type: Overspeed, CheckedValue: "1_0"}, "is not a number"},
		{"overspeed_unit", Rule{Type: Overspeed, CheckedValue: "90 km/h"}, "is not a number"},
		{"ignition_on_ignores_value", Rule{Type: IgnitionOn, CheckedValue: "whatever"}, ""},
		{"ignition_off", Rule{Type: IgnitionOff}, ""},
		{"sos", Rule{Type: SOS, CheckedValue: "x"}, ""},
		{"door_open", Rule{Type: DoorOpen}, ""},
		{"param", Rule{Type: Param, CheckedValue: "temp1 > 30"}, ""},
		{"param_bad", Rule{Type: Param, CheckedValue: "temp1"}, "is not NAME OP VALUE"},
		{"fuel_drop", Rule{Type: FuelDrop, CheckedValue: "20"}, ""},
		{"fuel_drop_zero", Rule{Type: FuelDrop, CheckedValue: "0"}, "must be more than 0"},
		{"fuel_drop_word", Rule{Type: FuelDrop, CheckedValue: "much"}, "is not a number"},
		{"stopped", Rule{Type: Stopped, CheckedValue: "10"}, ""},
		{"stopped_fraction", Rule{Type: Stopped, CheckedValue: "0.5"}, ""},
		{"stopped_year", Rule{Type: Stopped, CheckedValue: "525600"}, ""},
		{"stopped_over_a_year", Rule{Type: Stopped, CheckedValue: "525601"}, "at most 525600 minutes"},
		{"stopped_zero", Rule{Type: Stopped, CheckedValue: "0"}, "must be more than 0 minutes"},
		{"connection_no", Rule{Type: ConnectionNo, CheckedValue: "60"}, ""},
		{"connection_no_word", Rule{Type: ConnectionNo, CheckedValue: "an hour"}, "is not a number of minutes"},
		{"zone_in", Rule{Type: ZoneIn, CheckedValue: "ignored", Zones: []string{"4"}}, ""},
		{"zone_out", Rule{Type: ZoneOut, Zones: []string{"4", "5"}}, ""},
		{"zone_in_no_zone", Rule{Type: ZoneIn}, "zones names no zone"},
		{"zone_out_missing", Rule{Type: ZoneOut, Zones: []string{"4", "99"}, ZonesMissing: []string{"99"}}, `zones ["99"] are not zones of the rule's account`},
		{"zone_in_window", Rule{Type: ZoneIn, Zones: []string{"4"}, WeekDays: []string{"x"}}, `week_days "x" is not a day name`},
		{"route_out", Rule{Type: RouteOut}, "kept, not evaluated: there is no routes resource"},
		{"unknown", Rule{Type: "teleport"}, `unknown type "teleport"`},
		{"empty_type", Rule{}, `unknown type ""`},
		{"week_days", Rule{Type: SOS, WeekDays: []string{"mon", "sun", "mon"}}, ""},
		{"week_days_bad", Rule{Type: SOS, WeekDays: []string{"mon", "monday"}}, `week_days "monday" is not a day name`},
		{"week_days_upper", Rule{Type: SOS, WeekDays: []string{"Mon"}}, `week_days "Mon" is not a day name`},
		{"day_time", Rule{Type: SOS, DayTime: DayTime{From: "22:00", To: "06:00"}}, ""},
		{"day_time_whole_day", Rule{Type: SOS, DayTime: DayTime{From: "00:00", To: "23:59"}}, ""},
		{"day_time_one_minute", Rule{Type: SOS, DayTime: DayTime{From: "12:00", To: "12:00"}}, ""},
		{"day_time_from_only", Rule{Type: SOS, DayTime: DayTime{From: "08:00"}}, "needs both from and to, or neither"},
		{"day_time_to_only", Rule{Type: SOS, DayTime: DayTime{To: "08:00"}}, "needs both from and to, or neither"},
		{"day_time_24", Rule{Type: SOS, DayTime: DayTime{From: "24:00", To: "08:00"}}, `day_time from "24:00" is not HH:MM`},
		{"day_time_minute_60", Rule{Type: SOS, DayTime: DayTime{From: "08:00", To: "08:60"}}, `day_time to "08:60" is not HH:MM`},
		{"day_time_short", Rule{Type: SOS, DayTime: DayTime{From: "8:00", To: "09:00"}}, `day_time from "8:00" is not HH:MM`},
		{"day_time_seconds", Rule{Type: SOS, DayTime: DayTime{From: "08:00:00", To: "09:00"}}, "is not HH:MM"},
		{"checked_value_before_window", Rule{Type: Overspeed, CheckedValue: "x", WeekDays: []string{"xx"}}, "checked_value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, reason := Check(c.rule)
			if ok != (c.reason == "") {
				t.Fatalf("Check = %v, %q; want evaluable %v", ok, reason, c.reason == "")
			}
			if ok && reason != "" {
				t.Errorf("evaluable with a reason %q", reason)
			}
			if !strings.Contains(reason, c.reason) {
				t.Errorf("reason %q does not say %q", reason, c.reason)
			}
		})
	}
}

// TestParseParam states the grammar of a param checked_value.
func TestParseParam(t *testing.T) {
	cases := []struct {
		in, name, op, text string
		isNum              bool
		reason             string
	}{
		{in: "temp1 > 30", name: "temp1", op: ">", text: "30", isNum: true},
		{in: "temp1>30", name: "temp1", op: ">", text: "30", isNum: true},
		{in: "  temp1  >=  -3.5  ", name: "temp1", op: ">=", text: "-3.5", isNum: true},
		{in: "a<=1", name: "a", op: "<=", text: "1", isNum: true},
		{in: "a<1", name: "a", op: "<", text: "1", isNum: true},
		{in: "a != 1", name: "a", op: "!=", text: "1", isNum: true},
		{in: "status = moving", name: "status", op: "=", text: "moving"},
		{in: "status = on the road", name: "status", op: "=", text: "on the road"},
		{in: `status = "30"`, name: "status", op: "=", text: "30"},
		{in: `status = ""`, name: "status", op: "=", text: ""},
		{in: `status = " a b "`, name: "status", op: "=", text: " a b "},
		{in: "température > 30", name: "température", op: ">", text: "30", isNum: true},
		{in: "io.1-x_y = 1", name: "io.1-x_y", op: "=", text: "1", isNum: true},
		{in: "a == 1", reason: "one operator only (= not ==)"},
		{in: "a => 1", reason: "one operator only"},
		{in: "a = >1", reason: "one operator only"},
		{in: "temp1", reason: "no operator"},
		{in: "temp1 30", reason: "no operator"},
		{in: "a ! 1", reason: "no operator"},
		{in: "> 30", reason: "no attribute NAME"},
		{in: "", reason: "no attribute NAME"},
		{in: "a =", reason: "no VALUE"},
		{in: "a =   ", reason: "no VALUE"},
		{in: `a = "x`, reason: "quoted VALUE"},
		{in: `a = "x"y"`, reason: "quoted VALUE"},
		{in: `a = x"y`, reason: "quoted VALUE"},
		{in: `a = "`, reason: "quoted VALUE"},
		{in: `"a" = 1`, reason: "no attribute NAME"},
		{in: strings.Repeat("n", 64) + " = 1", name: strings.Repeat("n", 64), op: "=", text: "1", isNum: true},
		{in: strings.Repeat("n", 65) + " = 1", reason: "NAME is 65 characters, at most 64"},
		{in: "a = " + strings.Repeat("v", 256), name: "a", op: "=", text: strings.Repeat("v", 256)},
		{in: "a = " + strings.Repeat("v", 257), reason: "VALUE is 257 characters, at most 256"},
		{in: "a = \xff", reason: "not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			e, reason := parseParam(c.in)
			if !strings.Contains(reason, c.reason) || (reason == "") != (c.reason == "") {
				t.Fatalf("reason %q, want %q", reason, c.reason)
			}
			if c.reason != "" {
				return
			}
			if e.name != c.name || e.op != c.op || e.text != c.text || e.isNum != c.isNum {
				t.Errorf("got %+v", e)
			}
		})
	}
}

// TestParamEval states how a param compares an attribute with VALUE.
func TestParamEval(t *testing.T) {
	cases := []struct {
		expr  string
		v     any
		holds bool
		known bool
	}{
		{"t > 30", 31.5, true, true},
		{"t > 30", 30.0, false, true},
		{"t >= 30", 30.0, true, true},
		{"t < 30", 29.0, true, true},
		{"t <= 30", 30.0, true, true},
		{"t = 30", 30.0, true, true},
		{"t = 30.0", 30.0, true, true},
		{"t != 30", 30.0, false, true},
		{"t > 30", "31", true, true},   // a numeric string is a number
		{"t > 30", "4", false, true},   // numerically, not "4" > "30"
		{"t > 30", "abc", true, true},  // "abc" > "30" as strings
		{"t = on", "on", true, true},   // strings
		{"t = on", "ON", false, true},  // case matters
		{"t = true", true, true, true}, // a bool as "true"
		{"t != true", false, true, true},
		{`t = "30"`, 30.0, true, true},    // a quoted VALUE is a string: "30" = "30"
		{`t = "30.0"`, 30.0, false, true}, // "30" != "30.0" as strings
		{"t = 5", true, false, true},      // "true" != "5"
		{"t > 30", nil, false, false},
		{"t > 30", []any{1.0}, false, false},
		{"t > 30", map[string]any{}, false, false},
	}
	for _, c := range cases {
		e, reason := parseParam(c.expr)
		if reason != "" {
			t.Fatal(reason)
		}
		holds, known := e.eval(c.v)
		if holds != c.holds || known != c.known {
			t.Errorf("%s on %#v: %v, %v; want %v, %v", c.expr, c.v, holds, known, c.holds, c.known)
		}
	}
}

// TestParseNumber states the numbers checked_value and attributes accept.
func TestParseNumber(t *testing.T) {
	good := map[string]float64{"0": 0, "90": 90, "+1": 1, "-1.5": -1.5, ".5": 0.5, "5.": 5, "1e3": 1000, "1E-1": 0.1, "007": 7}
	for s, want := range good {
		if v, ok := parseNumber(s); !ok || v != want {
			t.Errorf("%q: %v %v", s, v, ok)
		}
	}
	for _, s := range []string{"", " 1", "1 ", "+", "-", ".", "e5", "1e", "1e+", "0x10", "1_000", "Inf", "-inf", "NaN", "1e309", "1,5", "1.2.3", "١"} {
		if v, ok := parseNumber(s); ok {
			t.Errorf("%q read as %v", s, v)
		}
	}
}
