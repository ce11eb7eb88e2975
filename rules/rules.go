// Package rules evaluates a fleet's event rules (docs/design.md §14, "Rules
// in force"): readings and rule definitions in, the new evaluation state and
// what fired out. It holds no SQL and no HTTP: storage loads the rules and
// the device's state, calls Evaluate under the device's row lock in the
// transaction that stores the reading, and writes back what it returns.
package rules

import "time"

// The rule types of docs/design.md §14 and §15 (zone_in, zone_out), and
// route_out, kept but not evaluated: there is no routes resource.
const (
	Overspeed    = "overspeed"
	IgnitionOn   = "ignition_on"
	IgnitionOff  = "ignition_off"
	SOS          = "sos"
	DoorOpen     = "door_open"
	Param        = "param"
	FuelDrop     = "fuel_drop"
	Stopped      = "stopped"
	ConnectionNo = "connection_no"
	ZoneIn       = "zone_in"
	ZoneOut      = "zone_out"
	RouteOut     = "route_out"

	// ServiceSoon and ServiceExpired are the types of the notifications a
	// notify_service_expire service record yields (ServiceState).
	ServiceSoon    = "service_soon"
	ServiceExpired = "service_expired"
)

// NotificationTypes returns every type a notification takes (docs/design.md
// §14): the event rule types, then the service notifications', in the
// order above. A webhook's types name some of them (POST /webhooks).
func NotificationTypes() []string {
	return []string{Overspeed, IgnitionOn, IgnitionOff, SOS, DoorOpen, Param, FuelDrop, Stopped, ConnectionNo,
		ZoneIn, ZoneOut, RouteOut, ServiceSoon, ServiceExpired}
}

// Reading is one accepted reading as the rules see it. A nil field was not
// reported. Attribute values are float64, bool or string.
type Reading struct {
	Time        time.Time
	Lat, Lon    *float64
	Speed       *float64
	Odometer    *float64
	EngineHours *float64
	Ignition    *bool
	Attributes  map[string]any
	// InZones holds the ids of the zones, among those the device's rules
	// name, that contain the position (storage computes it with package
	// places); nil when the reading has no position.
	InZones map[string]bool
}

// DayTime is a rule's daily window, "HH:MM" each; both empty: all day. From
// after To spans midnight.
type DayTime struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Rule is an active event rule of the device's account that names the
// device (or every device), as storage read it.
type Rule struct {
	ID           int64
	Type         string
	Name         string
	CheckedValue string
	WeekDays     []string // "mon".."sun"; empty: every day
	DayTime      DayTime
	// Zones are the zone ids a zone_in or zone_out rule names; ZonesMissing
	// those of them that are not zones of the rule's account (absent, of
	// another account, or not an id), as storage found them: a rule with
	// any is not evaluable.
	Zones        []string
	ZonesMissing []string
}

// State is one device's evaluation state between readings, stored as JSON
// (objects.rule_state). The zero value is a device never evaluated.
type State struct {
	// Rules holds each rule's state by rule id (as a decimal string: JSON
	// object keys); a rule absent is armed with nothing remembered.
	Rules map[string]RuleState `json:"rules,omitempty"`
	// Prev holds what the previous evaluated readings reported of the values
	// the transition types compare: the newest one's time, the last
	// reported ignition and the last reported numeric fuel (Attributes
	// "fuel"). A rule that remembers nothing is not stored, so the state of
	// a device with no condition in force is {"prev":{...}}.
	Prev *Snapshot `json:"prev,omitempty"`
}

// RuleState is one rule's state on one device.
type RuleState struct {
	// Fired is true while the condition that fired holds: the rule re-arms
	// when it ends.
	Fired bool `json:"fired,omitempty"`
	// Since is when the condition began (stopped: speed 0 since).
	Since *time.Time `json:"since,omitempty"`
	// Silence is the last reading's time of the silence connection_no
	// fired for (at most once per silence).
	Silence *time.Time `json:"silence,omitempty"`
	// In is whether the last positioned reading lay in one of a zone_in or
	// zone_out rule's zones; nil before the first (which only sets it).
	In *bool `json:"in,omitempty"`
}

// Snapshot is what the previous readings reported. Speed is not written
// (stopped keeps its own Since per rule); it is read by nothing and kept so
// that a stored state holding it still decodes.
type Snapshot struct {
	Time       time.Time      `json:"time"`
	Speed      *float64       `json:"speed,omitempty"`
	Ignition   *bool          `json:"ignition,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Fired is one rule that fired: storage turns it into a notification row.
type Fired struct {
	RuleID  int64
	Type    string
	Time    time.Time // the reading's time, or the clock's for connection_no
	Value   string    // the value that fired it (a speed, an attribute's value, the minutes of silence)
	Message string    // for people: the rule's name and what happened
}
