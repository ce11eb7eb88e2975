package rules

import "time"

// Silence applies the clock to a device whose newest reading is at last:
// connection_no rules whose checked_value minutes have passed by now fire,
// at most once per silence (a reading re-arms them), when now (read in loc,
// nil: UTC) is in the rule's week_days and day_time; a silence that passes
// its minutes outside the window fires at the first call inside it while it
// lasts. Fired.Time is now, Fired.Value the whole minutes of silence. A
// zero last (a device that never reported) fires nothing. Rules of other
// types and their state are left as they are; st is not modified.
func Silence(rs []Rule, loc *time.Location, st State, last, now time.Time) (State, []Fired) {
	if last.IsZero() {
		return st, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	var fired []Fired
	var clock *local
	next := st
	for _, rule := range rs {
		if rule.Type != ConnectionNo {
			continue
		}
		c, reason := compile(rule)
		if reason != "" {
			continue
		}
		d := now.Sub(last)
		if d < minutes(c.num) {
			continue
		}
		key := ruleKey(rule.ID)
		old := next.Rules[key]
		if old.Silence != nil && !old.Silence.Before(last) {
			continue // fired for this silence already
		}
		if clock == nil {
			l := localTime(now, loc)
			clock = &l
		}
		if !c.win.admits(*clock) {
			continue
		}
		if len(fired) == 0 {
			next.Rules = make(map[string]RuleState, len(st.Rules)+1)
			for k, v := range st.Rules {
				next.Rules[k] = v
			}
		}
		l := last.UTC()
		old.Silence = &l
		next.Rules[key] = old
		m := wholeMinutes(d)
		fired = append(fired, Fired{RuleID: rule.ID, Type: rule.Type, Time: now, Value: m,
			Message: "No connection: no reading for " + m + " min (at least " + formatNumber(c.num) + ")" + ruleOf(rule)})
	}
	return next, fired
}
