package rules

import "time"

// Check reports whether a rule can be evaluated: false with the reason (for
// GET /events' "evaluable" and "reason") for a malformed checked_value,
// week_days or day_time, and for the types kept but not evaluated (zone_in,
// zone_out, route_out) or unknown.
func Check(r Rule) (evaluable bool, reason string) {
	return false, "not implemented yet"
}

// Evaluate applies one reading, newer than every reading this state has
// seen, to the device's rules read in loc (the account's time zone). It
// returns the next state and what fired, in rule order. A rule that Check
// refuses never fires.
func Evaluate(rs []Rule, loc *time.Location, st State, r Reading) (State, []Fired) {
	return st, nil
}

// Silence applies the clock to a device whose newest reading is at last:
// connection_no rules whose checked_value minutes have passed by now fire,
// at most once per silence (a reading re-arms them).
func Silence(rs []Rule, loc *time.Location, st State, last, now time.Time) (State, []Fired) {
	return st, nil
}
