package rules

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Evaluate applies one reading, newer than every reading this state has
// seen, to the device's rules read in loc (the account's time zone; nil:
// UTC). It returns the next state and what fired, in rule order. A rule that
// Check refuses never fires.
//
// rs are all the device's active rules, each id once: the state of a rule
// not in rs (deleted, deactivated, no longer naming the device) or that
// Check refuses is dropped, and a rule absent from the state is armed. A
// reading not newer than the state's previous one (st.Prev.Time) is not
// evaluated: st is returned as it is, with nothing fired. st is not
// modified. The semantics of each type: docs/decisions.md "Rules in force".
func Evaluate(rs []Rule, loc *time.Location, st State, r Reading) (State, []Fired) {
	if st.Prev != nil && !r.Time.After(st.Prev.Time) {
		return st, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	next := State{Prev: advance(st.Prev, r)}
	var fired []Fired
	var clock *local
	for _, rule := range rs {
		c, reason := compile(rule)
		if reason != "" {
			continue
		}
		key := ruleKey(rule.ID)
		s, h := step(rule, c, st.Rules[key], st.Prev, r)
		if !s.zero() {
			if next.Rules == nil {
				next.Rules = make(map[string]RuleState, len(rs))
			}
			next.Rules[key] = s
		}
		if !h.fire {
			continue
		}
		if clock == nil {
			l := localTime(r.Time, loc)
			clock = &l
		}
		if c.win.admits(*clock) {
			fired = append(fired, Fired{RuleID: rule.ID, Type: rule.Type, Time: r.Time, Value: h.value, Message: h.message})
		}
	}
	return next, fired
}

// hit is what a rule's step observed: whether the condition began now
// (fire), and the value and message of the notification if it fires.
type hit struct {
	fire           bool
	value, message string
}

// step is one rule's transition on a reading: its next state and whether
// its condition began (before the window is read: a transition outside the
// window is consumed, not fired later). An unreported field leaves the
// rule's state as it was.
func step(rule Rule, c compiled, old RuleState, prev *Snapshot, r Reading) (RuleState, hit) {
	switch rule.Type {
	case Overspeed:
		if r.Speed == nil {
			return old, hit{}
		}
		v := *r.Speed
		s, fire := level(old, v > c.num)
		if !fire {
			return s, hit{}
		}
		return s, hit{true, formatNumber(v), "Overspeed: " + formatNumber(v) + " km/h > " + formatNumber(c.num) + ruleOf(rule)}
	case SOS, DoorOpen:
		name, what := "sos", "SOS"
		if rule.Type == DoorOpen {
			name, what = "door", "Door open"
		}
		v, ok := r.Attributes[name]
		if !ok {
			return old, hit{}
		}
		holds, known := truthy(v)
		if !known {
			return old, hit{}
		}
		s, fire := level(old, holds)
		if !fire {
			return s, hit{}
		}
		return s, hit{true, formatAttr(v), what + ": " + name + " is " + formatAttr(v) + ruleOf(rule)}
	case Param:
		e := c.param
		v, ok := r.Attributes[e.name]
		if !ok {
			return old, hit{}
		}
		holds, known := e.eval(v)
		if !known {
			return old, hit{}
		}
		s, fire := level(old, holds)
		if !fire {
			return s, hit{}
		}
		return s, hit{true, formatAttr(v), "Parameter: " + e.name + " is " + formatAttr(v) + ", " + e.op + " " + e.text + ruleOf(rule)}
	case FuelDrop:
		cur, ok := attrNumber(r.Attributes["fuel"])
		if !ok {
			return old, hit{}
		}
		before, ok := prevFuel(prev)
		if !ok {
			return RuleState{}, hit{}
		}
		drop := roundMicro(before - cur)
		s, fire := level(old, drop >= c.num)
		if !fire {
			return s, hit{}
		}
		return s, hit{true, formatNumber(drop),
			"Fuel drop: " + formatNumber(drop) + " (from " + formatNumber(before) + " to " + formatNumber(cur) + ") ≥ " + formatNumber(c.num) + ruleOf(rule)}
	case Stopped:
		return stopped(rule, c, old, r)
	case ZoneIn, ZoneOut:
		return zoneStep(rule, old, r)
	case IgnitionOn, IgnitionOff:
		if r.Ignition == nil || prev == nil || prev.Ignition == nil {
			return RuleState{}, hit{}
		}
		on := rule.Type == IgnitionOn
		if *prev.Ignition == on || *r.Ignition != on {
			return RuleState{}, hit{}
		}
		if on {
			return RuleState{}, hit{true, "true", "Ignition on" + ruleOf(rule)}
		}
		return RuleState{}, hit{true, "false", "Ignition off" + ruleOf(rule)}
	}
	// connection_no: a reading ends the silence and re-arms the rule.
	return RuleState{}, hit{}
}

// level is the transition of a condition read on one reading: it fires when
// the condition holds and did not on the rule's previous reading, and
// re-arms when it does not hold.
func level(old RuleState, holds bool) (RuleState, bool) {
	if !holds {
		return RuleState{}, false
	}
	if old.Fired {
		return old, false
	}
	return RuleState{Fired: true}, true
}

// stopped fires on the reading that shows speed 0 for at least checked_value
// minutes since the first reading of speed 0 (Since); a reading with speed
// above 0 re-arms it, one without speed changes nothing.
func stopped(rule Rule, c compiled, old RuleState, r Reading) (RuleState, hit) {
	if r.Speed == nil {
		return old, hit{}
	}
	if *r.Speed > 0 {
		return RuleState{}, hit{}
	}
	s := old
	if s.Since == nil {
		t := r.Time.UTC()
		s.Since = &t
	}
	if s.Fired {
		return s, hit{}
	}
	d := r.Time.Sub(*s.Since)
	if d < minutes(c.num) {
		return s, hit{}
	}
	s.Fired = true
	m := wholeMinutes(d)
	return s, hit{true, m, "Stopped: speed 0 for " + m + " min (at least " + formatNumber(c.num) + ")" + ruleOf(rule)}
}

// advance is the snapshot after reading r: its time, the last reported
// ignition and the last reported numeric fuel (an unreported or
// non-numeric one keeps the previous).
func advance(prev *Snapshot, r Reading) *Snapshot {
	s := &Snapshot{Time: r.Time.UTC()}
	if r.Ignition != nil {
		b := *r.Ignition
		s.Ignition = &b
	} else if prev != nil && prev.Ignition != nil {
		b := *prev.Ignition
		s.Ignition = &b
	}
	if f, ok := attrNumber(r.Attributes["fuel"]); ok {
		s.Attributes = map[string]any{"fuel": f}
	} else if f, ok := prevFuel(prev); ok {
		s.Attributes = map[string]any{"fuel": f}
	}
	return s
}

// roundMicro rounds a difference of two readings' values to millionths, so
// that 0.3 − 0.1 is a drop of 0.2 (not 0.19999999999999998) both when it is
// compared and when it is written.
func roundMicro(v float64) float64 {
	if math.Abs(v) >= 1e12 {
		return v
	}
	return math.Round(v*1e6) / 1e6
}

// prevFuel is the fuel a previous snapshot remembers.
func prevFuel(prev *Snapshot) (float64, bool) {
	if prev == nil {
		return 0, false
	}
	return attrNumber(prev.Attributes["fuel"])
}

// truthy reads sos and door: true is bool true, a number other than 0, or
// the string "1" or "true" (any case); false is bool false, 0 or any other
// string. Any other value is unknown.
func truthy(v any) (holds, known bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case float64:
		return x != 0 && !math.IsNaN(x), true
	case string:
		return x == "1" || len(x) == 4 && (x[0]|0x20) == 't' && (x[1]|0x20) == 'r' && (x[2]|0x20) == 'u' && (x[3]|0x20) == 'e', true
	}
	return false, false
}

// formatAttr writes an attribute's value for Fired.Value.
func formatAttr(v any) string {
	switch x := v.(type) {
	case float64:
		return formatNumber(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return ""
}

// ruleOf ends a message with the rule's name.
func ruleOf(r Rule) string { return " (rule " + strconv.Quote(r.Name) + ")" }

// ruleKey is a rule's key in State.Rules.
func ruleKey(id int64) string { return strconv.FormatInt(id, 10) }

// minutes is n minutes as a duration (n ≤ MaxMinutes).
func minutes(n float64) time.Duration { return time.Duration(n * float64(time.Minute)) }

// wholeMinutes writes d in whole minutes, rounded down.
func wholeMinutes(d time.Duration) string { return strconv.FormatInt(int64(d/time.Minute), 10) }

// zero reports a rule state that remembers nothing (armed): it is not
// stored.
func (s RuleState) zero() bool { return !s.Fired && s.Since == nil && s.Silence == nil && s.In == nil }

// zoneStep is the step of zone_in and zone_out: the rule's condition is "the
// position lies in one of its zones"; zone_in fires when it becomes true,
// zone_out when it becomes false. The first positioned reading only sets
// the state; a reading without a position changes nothing.
func zoneStep(rule Rule, old RuleState, r Reading) (RuleState, hit) {
	if r.Lat == nil || r.Lon == nil {
		return old, hit{}
	}
	var in []string
	for _, z := range rule.Zones {
		if r.InZones[z] {
			in = append(in, z)
		}
	}
	inside := len(in) > 0
	s := RuleState{In: &inside}
	if old.In == nil || *old.In == inside {
		return s, hit{}
	}
	pos := formatNumber(*r.Lat) + "," + formatNumber(*r.Lon)
	if rule.Type == ZoneIn && inside {
		return s, hit{true, strings.Join(in, ","), "Zone in: entered zone " + strings.Join(in, ", ") + " at " + pos + ruleOf(rule)}
	}
	if rule.Type == ZoneOut && !inside {
		return s, hit{true, strings.Join(rule.Zones, ","), "Zone out: left zone " + strings.Join(rule.Zones, ", ") + " at " + pos + ruleOf(rule)}
	}
	return s, hit{}
}
