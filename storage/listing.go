package storage

import "math"

// FieldKind is the type of a listed resource's field, as exact-match
// filters parse it and as SQL compares it.
type FieldKind int

// The field kinds of the listed resources.
const (
	KindInt      FieldKind = iota // integer, a bigint column
	KindText                      // string
	KindBool                      // boolean
	KindDate                      // "YYYY-MM-DD"
	KindTime                      // RFC 3339 timestamp
	KindTextList                  // list of strings; a filter matches rows whose list contains the value
	KindObject                    // JSON object; a filter matches an equal object
	KindInt32                     // integer, an integer (32-bit) column
)

// Field is one sortable and filterable field of a listed resource; its name
// is also its column.
type Field struct {
	Name string
	Kind FieldKind
}

// IntRange returns the values a filter on the integer field f may take:
// its column's type range (integer for KindInt32, bigint for KindInt) from
// 0, since every integer column of a listed resource is CHECKed
// non-negative (migrations/). A value outside can match no row, and
// PostgreSQL would refuse some of them, so it is a bad parameter, not an
// empty answer.
func (f Field) IntRange() (lo, hi int64) {
	if f.Kind == KindInt32 {
		return 0, math.MaxInt32
	}
	return 0, math.MaxInt64
}

// Listing describes a listed resource: its id field, its other fields in the
// spec's order (each sortable and filterable), and its free-text search
// fields.
type Listing struct {
	Resource string
	// alias is the table alias of the resource's bun model.
	alias  string
	ID     string
	Fields []Field
	Search []string
}

// Field returns the field called name, and whether there is one. The id
// field is found too (it is sortable, not filterable).
func (l Listing) Field(name string) (Field, bool) {
	if name == l.ID {
		return Field{Name: l.ID, Kind: KindInt}, true
	}
	for _, f := range l.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// SortFields returns the sort enumeration: the id, then every field.
func (l Listing) SortFields() []string {
	out := []string{l.ID}
	for _, f := range l.Fields {
		out = append(out, f.Name)
	}
	return out
}

// ServiceListing describes GET /services (spec §4.4, DESIGN §5).
func ServiceListing() Listing {
	return Listing{Resource: "services", alias: "s", ID: "service_id", Search: []string{"name", "imei"}, Fields: []Field{
		{"imei", KindText}, {"name", KindText},
		{"odo", KindBool}, {"odo_interval", KindInt32}, {"odo_last", KindInt32},
		{"engh", KindBool}, {"engh_interval", KindInt32}, {"engh_last", KindInt32},
		{"days", KindBool}, {"days_interval", KindInt32}, {"days_last", KindDate},
		{"odo_left", KindBool}, {"odo_left_num", KindInt32},
		{"engh_left", KindBool}, {"engh_left_num", KindInt32},
		{"days_left", KindBool}, {"days_left_num", KindInt32},
		{"update_last", KindBool}, {"notify_service_expire", KindBool},
	}}
}

// ReportListing describes GET /reports (spec §4.7, DESIGN §5).
func ReportListing() Listing {
	return Listing{Resource: "reports", alias: "r", ID: "report_id", Search: []string{"name", "type"}, Fields: []Field{
		{"name", KindText}, {"type", KindText}, {"format", KindText},
		{"show_addresses", KindBool}, {"zones_addresses", KindBool}, {"show_trip_image", KindBool},
		{"stop_duration", KindInt32}, {"speed_limit", KindInt32},
		{"imei", KindTextList}, {"zone_ids", KindTextList}, {"sensor_names", KindTextList}, {"data_items", KindTextList},
		{"schedule_period", KindText}, {"schedule_email_address", KindText},
		{"dt_schedule_d", KindTime}, {"dt_schedule_w", KindTime},
	}}
}

// EventListing describes GET /events (spec §4.8, DESIGN §5).
func EventListing() Listing {
	return Listing{Resource: "events", alias: "e", ID: "event_id", Search: []string{"name", "type"}, Fields: []Field{
		{"type", KindText}, {"name", KindText}, {"active", KindBool},
		{"week_days", KindTextList}, {"day_time", KindObject}, {"imei", KindTextList},
		{"checked_value", KindText}, {"route_trigger", KindText}, {"zone_trigger", KindText},
		{"routes", KindTextList}, {"zones", KindTextList},
		{"notify_system", KindBool}, {"notify_email", KindBool}, {"notify_email_address", KindText},
		{"notify_sms", KindBool}, {"notify_sms_number", KindText}, {"notify_telegram", KindBool},
		{"email_template_id", KindInt}, {"sms_template_id", KindInt},
		{"cmd_send", KindBool}, {"cmd_gateway", KindText}, {"cmd_type", KindText}, {"cmd_string", KindText},
	}}
}
