package rules

import (
	"fmt"
	"strings"
)

// MaxMinutes bounds the checked_value of stopped and connection_no: a year
// of minutes.
const MaxMinutes = 525600

// notEvaluated is the reason of route_out: kept, never evaluated, since
// nothing defines a route (there is no routes resource).
const notEvaluated = "kept, not evaluated: there is no routes resource"

// compiled is a rule Check accepted, with its checked_value parsed: num is
// the number of overspeed (km/h), fuel_drop and stopped/connection_no
// (minutes); param the expression of param; win the rule's window.
type compiled struct {
	num   float64
	param paramExpr
	win   window
}

// Check reports whether a rule can be evaluated: false with the reason (for
// GET /events' "evaluable" and "reason") for a malformed checked_value,
// week_days or day_time, for a zone_in or zone_out rule naming no zone or a
// zone that is not of its account (Rule.ZonesMissing), and for route_out
// (kept, not evaluated) or an unknown type.
func Check(r Rule) (evaluable bool, reason string) {
	_, reason = compile(r)
	return reason == "", reason
}

// compile parses a rule's checked_value, week_days and day_time: the reason
// it cannot be evaluated, or "".
func compile(r Rule) (compiled, string) {
	var c compiled
	var reason string
	switch r.Type {
	case Overspeed:
		c.num, reason = positive(r.CheckedValue, "a number of km/h", "km/h", 0)
	case FuelDrop:
		c.num, reason = positive(r.CheckedValue, "a number (the drop of attribute fuel)", "", 0)
	case Stopped, ConnectionNo:
		c.num, reason = positive(r.CheckedValue, "a number of minutes", "minutes", MaxMinutes)
	case Param:
		c.param, reason = parseParam(r.CheckedValue)
	case IgnitionOn, IgnitionOff, SOS, DoorOpen:
		// checked_value is not read.
	case ZoneIn, ZoneOut:
		switch {
		case len(r.ZonesMissing) > 0:
			reason = fmt.Sprintf("zones %q are not zones of the rule's account", r.ZonesMissing)
		case len(r.Zones) == 0:
			reason = "zones names no zone"
		}
	case RouteOut:
		return c, notEvaluated
	default:
		return c, fmt.Sprintf("unknown type %q", r.Type)
	}
	if reason != "" {
		return c, reason
	}
	c.win, reason = parseWindow(r.WeekDays, r.DayTime)
	return c, reason
}

// positive parses checked_value as a number more than 0 (and at most max
// when max > 0); what and unit word the reason.
func positive(s, what, unit string, max float64) (float64, string) {
	v, ok := parseNumber(strings.TrimSpace(s))
	if !ok {
		return 0, fmt.Sprintf("checked_value %q is not %s", s, what)
	}
	if unit != "" {
		unit = " " + unit
	}
	if v <= 0 {
		return 0, fmt.Sprintf("checked_value %q must be more than 0%s", s, unit)
	}
	if max > 0 && v > max {
		return 0, fmt.Sprintf("checked_value %q must be at most %g%s", s, max, unit)
	}
	return v, ""
}
