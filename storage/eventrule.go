package storage

import (
	"encoding/json"
	"strconv"

	"github.com/fleetapi/fleetapi/rules"
)

// Rule returns the event rule as the rules package reads it. A day_time
// bound that is not a string (a value written behind the API's back) is
// passed on as its JSON text, which rules.Check refuses as not "HH:MM":
// such a rule is not evaluable, rather than evaluated all day. Keys of
// day_time other than from and to are not read.
func (e Event) Rule() rules.Rule {
	return rules.Rule{
		ID: e.EventID, Type: e.Type, Name: e.Name, CheckedValue: e.CheckedValue,
		WeekDays: []string(e.WeekDays),
		DayTime:  rules.DayTime{From: dayTimeBound(e.DayTime, "from"), To: dayTimeBound(e.DayTime, "to")},
		Zones:    []string(e.Zones),
		// a zone named by something other than an id is missing whatever
		// exists; whether an id names a zone of the account is looked up
		// (EventZonesMissing, the evaluation's loadPlaces)
		ZonesMissing: notZoneIDs(e),
	}
}

// notZoneIDs are the zones a zone rule names that are not zone ids (a
// positive decimal integer in canonical form).
func notZoneIDs(e Event) []string {
	if !zoneRule(e) {
		return nil
	}
	return missingZones(e, func(z string) (int64, bool) {
		id, err := strconv.ParseInt(z, 10, 64)
		return e.AccountID, err == nil && id > 0 && strconv.FormatInt(id, 10) == z
	})
}

// dayTimeBound is day_time's bound key as a string: "" when absent, the
// JSON text of a value that is not a string.
func dayTimeBound(o JSONObject, key string) string {
	v, ok := o[key]
	if !ok {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == `""` {
		return "?"
	}
	return string(b)
}
