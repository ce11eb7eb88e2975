package rules

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzTypes are the types FuzzCheckedValue picks from, the unknown "" too.
var fuzzTypes = []string{Overspeed, IgnitionOn, IgnitionOff, SOS, DoorOpen, Param, FuelDrop, Stopped, ConnectionNo, ZoneIn, ZoneOut, RouteOut, "", "speeding"}

// FuzzCheckedValue: parsing any checked_value, week_days and day_time never
// panics, Check's answer and reason agree, and a rule Check refuses never
// fires, whatever the readings and the clock.
func FuzzCheckedValue(f *testing.F) {
	seeds := []struct {
		typ          uint8
		cv, day      string
		from, to     string
		attributeVal string
	}{
		{0, "90", "", "", "", ""},
		{0, "abc", "mon", "08:00", "18:00", ""},
		{5, "temp1 > 30", "", "", "", "31"},
		{5, `mode = "eco"`, "sun", "22:00", "06:00", "eco"},
		{5, "a == 1", "", "", "", "1"},
		{5, "a=", "", "", "", ""},
		{6, "20", "", "", "", ""},
		{7, "525601", "", "", "", ""},
		{8, "0.5", "fri", "23:59", "00:00", ""},
		{9, "1", "", "", "", ""},
		{12, "1", "", "", "", ""},
		{0, "1e400", "", "24:00", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.typ, s.cv, s.day, s.from, s.to, s.attributeVal)
	}
	f.Fuzz(func(t *testing.T, typ uint8, cv, day, from, to, attributeVal string) {
		rule := Rule{ID: 1, Name: cv, Type: fuzzTypes[int(typ)%len(fuzzTypes)], CheckedValue: cv, DayTime: DayTime{From: from, To: to}}
		if day != "" {
			rule.WeekDays = strings.Split(day, ",")
		}
		parseNumber(cv)
		parseParam(cv)
		ok, reason := Check(rule)
		if ok != (reason == "") {
			t.Fatalf("Check = %v, %q", ok, reason)
		}
		if !utf8.ValidString(reason) {
			t.Fatalf("reason is not UTF-8: %q", reason)
		}
		// Readings meant to fire every type: the attribute the checked_value
		// names (its first word) takes extreme values and attributeVal.
		name := cv
		if i := strings.IndexAny(name, " <>=!\""); i >= 0 {
			name = name[:i]
		}
		values := []any{-1e300, 1e300, 0.0, attributeVal, true, false, "1"}
		var st State
		rs := []Rule{rule}
		tm := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 3*len(values); i++ {
			v := values[i%len(values)]
			a := attrs{name: v, "sos": v, "door": v, "fuel": []float64{1e6, 0}[i%2]}
			r := Reading{Time: tm, Speed: num([]float64{0, 500}[i%2]), Ignition: flag(i%2 == 1), Attributes: a}
			var fired []Fired
			st, fired = Evaluate(rs, time.UTC, st, r)
			if !ok && len(fired) > 0 {
				t.Fatalf("refused (%s) but fired %+v", reason, fired)
			}
			tm = tm.Add(4*time.Hour + 13*time.Minute)
		}
		_, fired := Silence(rs, time.UTC, st, tm, tm.Add(2*MaxMinutes*time.Minute))
		if !ok && len(fired) > 0 {
			t.Fatalf("refused (%s) but fired %+v", reason, fired)
		}
		if !ok && len(st.Rules) > 0 {
			t.Fatalf("refused (%s) but kept state %+v", reason, st.Rules)
		}
	})
}

// fuzzRules are the rules of FuzzEvaluate: every type, two with windows
// (read in Europe/Berlin), one kept but not evaluated and one malformed.
var fuzzRules = []Rule{
	{ID: 1, Type: Overspeed, CheckedValue: "90"},
	{ID: 2, Type: IgnitionOn},
	{ID: 3, Type: IgnitionOff},
	{ID: 4, Type: SOS},
	{ID: 5, Type: DoorOpen},
	{ID: 6, Type: Param, CheckedValue: "t > 30"},
	{ID: 7, Type: Param, CheckedValue: `m != "x"`},
	{ID: 8, Type: FuelDrop, CheckedValue: "10"},
	{ID: 9, Type: Stopped, CheckedValue: "5"},
	{ID: 10, Type: ConnectionNo, CheckedValue: "30"},
	{ID: 11, Type: Overspeed, CheckedValue: "50", DayTime: DayTime{From: "22:00", To: "06:00"}},
	{ID: 12, Type: SOS, WeekDays: []string{"sat", "sun"}, DayTime: DayTime{From: "02:00", To: "02:59"}},
	{ID: 13, Type: ZoneIn},
	{ID: 14, Type: Stopped, CheckedValue: "later"},
}

// fuzzOracle tracks, per rule, whether its condition ended since it last
// fired (armed), independently of the state Evaluate keeps.
type fuzzOracle struct {
	armed    map[int64]bool
	fuel     *float64
	ignition *bool
}

// FuzzEvaluate: random sequences of readings and clock ticks never panic,
// no rule fires twice without its condition ending in between, a rule
// fires only inside its window and only from what may fire it, a stale
// reading changes nothing, and the state round-trips through JSON: a state
// decoded after every step fires and ends like the one kept in memory.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{1, 100, 2, 0b10, 50, 0, 1, 0, 1, 0, 40, 0, 10, 0, 0, 0, 255, 1, 0x85, 40, 0, 0, 0, 0})
	f.Add([]byte{60, 95, 1, 0xff, 100, 0, 60, 120, 2, 0, 80, 1, 0, 0, 0, 0, 0, 0, 0x80, 200, 0, 0, 0, 0})
	f.Add([]byte("stop and go, sos and doors, fuel theft at midnight in Berlin"))
	berlin := zone(f, "Europe/Berlin")
	f.Fuzz(func(t *testing.T, data []byte) {
		o := fuzzOracle{armed: map[int64]bool{}}
		for _, r := range fuzzRules {
			o.armed[r.ID] = r.Type != IgnitionOn && r.Type != IgnitionOff
		}
		var mem, wire State
		var last time.Time // the newest evaluated reading
		tm := time.Date(2026, 3, 28, 20, 0, 0, 0, time.UTC)
		for len(data) >= 6 {
			b := data[:6]
			data = data[6:]
			if b[0]&0x80 != 0 { // a clock tick
				now := last.Add(time.Duration(b[1]) * time.Minute)
				f1 := silence(t, berlin, &mem, &wire, last, now)
				for _, fd := range f1 {
					if fd.RuleID != 10 || !fd.Time.Equal(now) || last.IsZero() || now.Sub(last) < 30*time.Minute || !o.armed[10] {
						t.Fatalf("Silence fired %+v (last %v, armed %v)", fd, last, o.armed[10])
					}
					o.armed[10] = false
				}
				continue
			}
			tm = tm.Add(time.Duration(b[0]&0x3f) * time.Minute)
			if b[0]&0x40 != 0 {
				tm = tm.Add(-time.Minute)
			}
			r := fuzzReading(tm, b)
			before := stateJSON(t, mem)
			fired := evaluate(t, berlin, &mem, &wire, r)
			if !last.IsZero() && !tm.After(last) {
				if after := stateJSON(t, mem); len(fired) > 0 || after != before {
					t.Fatalf("a stale reading fired %+v or changed %s to %s", fired, before, after)
				}
				continue
			}
			last = tm
			o.check(t, berlin, r, fired)
		}
	})
}

// fuzzReading makes a reading at tm of six bytes: b[1] speed (255:
// unreported), b[2] ignition (unreported, false, true), b[3] two bits each
// of sos, door, t and m, b[4] fuel (255: unreported), b[5] bit 0: fuel as a
// string.
func fuzzReading(tm time.Time, b []byte) Reading {
	r := Reading{Time: tm, Attributes: attrs{}}
	if b[1] != 255 {
		r.Speed = num(float64(b[1] % 128))
	}
	if b[2]%3 != 0 {
		r.Ignition = flag(b[2]%3 == 2)
	}
	pick := func(shift uint, vs ...any) {
		if v := vs[int(b[3]>>shift)&3]; v != nil {
			r.Attributes[[]string{"sos", "door", "t", "m"}[shift/2]] = v
		}
	}
	pick(0, nil, false, true, "1")
	pick(2, nil, 0.0, 1.0, "true")
	pick(4, nil, 25.0, 35.0, "40")
	pick(6, nil, "x", "y", true)
	if b[4] != 255 {
		r.Attributes["fuel"] = float64(b[4])
		if b[5]&1 != 0 {
			r.Attributes["fuel"] = formatNumber(float64(b[4]))
		}
	}
	return r
}

// evaluate applies r to the state in memory and to the one decoded from
// JSON, and requires both to fire alike and to end alike.
func evaluate(t *testing.T, loc *time.Location, mem, wire *State, r Reading) []Fired {
	t.Helper()
	var f1, f2 []Fired
	*mem, f1 = Evaluate(fuzzRules, loc, *mem, r)
	*wire, f2 = Evaluate(fuzzRules, loc, *wire, r)
	same(t, mem, wire, f1, f2)
	return f1
}

// silence is evaluate for Silence.
func silence(t *testing.T, loc *time.Location, mem, wire *State, last, now time.Time) []Fired {
	t.Helper()
	var f1, f2 []Fired
	*mem, f1 = Silence(fuzzRules, loc, *mem, last, now)
	*wire, f2 = Silence(fuzzRules, loc, *wire, last, now)
	same(t, mem, wire, f1, f2)
	return f1
}

// same compares the two paths and replaces wire by its JSON round trip.
func same(t *testing.T, mem, wire *State, f1, f2 []Fired) {
	t.Helper()
	if !reflect.DeepEqual(f1, f2) {
		t.Fatalf("in memory %+v\nthrough JSON %+v", f1, f2)
	}
	a := stateJSON(t, *mem)
	b := stateJSON(t, *wire)
	if a != b {
		t.Fatalf("in memory %s\nthrough JSON %s", a, b)
	}
	var back State
	if err := json.Unmarshal([]byte(b), &back); err != nil {
		t.Fatal(err)
	}
	if c := stateJSON(t, back); c != b {
		t.Fatalf("round trip %s → %s", b, c)
	}
	*wire = back
}

// check asserts what fired on an evaluated reading and moves the oracle.
func (o *fuzzOracle) check(t *testing.T, loc *time.Location, r Reading, fired []Fired) {
	t.Helper()
	seen := map[int64]bool{}
	for _, fd := range fired {
		if seen[fd.RuleID] || !fd.Time.Equal(r.Time) || fd.Value == "" || fd.Message == "" {
			t.Fatalf("fired %+v", fired)
		}
		seen[fd.RuleID] = true
		if !o.armed[fd.RuleID] {
			t.Fatalf("rule %d fired again without its condition ending: %+v on %+v", fd.RuleID, fd, r)
		}
		l := localTime(r.Time, loc)
		switch fd.RuleID {
		case 10, 13, 14:
			t.Fatalf("rule %d fired from a reading: %+v", fd.RuleID, fd)
		case 11:
			if l.minute > 6*60 && l.minute < 22*60 {
				t.Fatalf("rule 11 fired outside 22:00-06:00: %v", r.Time.In(loc))
			}
		case 12:
			if l.day != time.Saturday && l.day != time.Sunday || l.minute < 120 || l.minute > 179 {
				t.Fatalf("rule 12 fired outside sat,sun 02:00-02:59: %v", r.Time.In(loc))
			}
		}
	}
	// Each condition read on this reading: known, and whether it holds.
	speed := func(limit float64) (bool, bool) { return r.Speed != nil && *r.Speed > limit, r.Speed != nil }
	attr := func(name string, holds func(any) (bool, bool)) (bool, bool) {
		v, ok := r.Attributes[name]
		if !ok {
			return false, false
		}
		return holds(v)
	}
	param := func(cv string) func(any) (bool, bool) {
		e, _ := parseParam(cv)
		return e.eval
	}
	fuel := func() (bool, bool) {
		cur, ok := attrNumber(r.Attributes["fuel"])
		if !ok {
			return false, false
		}
		before := o.fuel
		o.fuel = &cur
		return before != nil && *before-cur >= 10, true
	}
	conditions := map[int64]func() (bool, bool){
		1:  func() (bool, bool) { return speed(90) },
		4:  func() (bool, bool) { return attr("sos", truthy) },
		5:  func() (bool, bool) { return attr("door", truthy) },
		6:  func() (bool, bool) { return attr("t", param("t > 30")) },
		7:  func() (bool, bool) { return attr("m", param(`m != "x"`)) },
		8:  fuel,
		9:  func() (bool, bool) { return r.Speed != nil && *r.Speed == 0, r.Speed != nil },
		11: func() (bool, bool) { return speed(50) },
		12: func() (bool, bool) { return attr("sos", truthy) },
	}
	ends := map[int64]bool{10: true}
	for id, cond := range conditions {
		holds, known := cond()
		if seen[id] && !holds {
			t.Fatalf("rule %d fired while its condition does not hold: %+v on %+v", id, fired, r)
		}
		ends[id] = known && !holds
	}
	// stopped ends only when the device moves, not at a speed of 0.
	ends[9] = r.Speed != nil && *r.Speed > 0
	if r.Ignition != nil {
		on := *r.Ignition
		if seen[2] && (!on || o.ignition == nil || *o.ignition) || seen[3] && (on || o.ignition == nil || !*o.ignition) {
			t.Fatalf("ignition fired %+v on %v after %v", fired, on, o.ignition)
		}
		o.ignition = &on
		ends[2], ends[3] = !on, on
	} else if seen[2] || seen[3] {
		t.Fatalf("ignition fired without ignition: %+v", fired)
	}
	for id := range seen {
		o.armed[id] = false
	}
	for id, e := range ends {
		if e {
			o.armed[id] = true
		}
	}
}
