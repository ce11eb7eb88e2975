package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/policy"

	"github.com/uptrace/bun"
)

// Events is the events resource: GET /events and /events/{id} (docs/api.md §7, docs/design.md §5).
var Events = declare[Event](counted)

// Event is a row of events: an event rule naming a list of devices
// (docs/design.md §5). Its lists encode as [] and day_time as {} when empty.
type Event struct {
	bun.BaseModel `bun:"table:events,alias:e"`

	EventID            int64      `bun:"event_id,pk,autoincrement" json:"event_id"`
	AccountID          int64      `bun:"account_id,notnull" json:"-"`
	Type               string     `bun:"type,notnull" json:"type" list:"sort,filter,search=2"`
	Name               string     `bun:"name,notnull" json:"name" list:"sort,filter,search=1"`
	Active             bool       `bun:"active,notnull" json:"active" list:"sort,filter"`
	WeekDays           StringList `bun:"week_days,array,notnull" json:"week_days" list:"sort,filter"`
	DayTime            JSONObject `bun:"day_time,type:jsonb,notnull" json:"day_time" list:"sort,filter"`
	IMEI               StringList `bun:"imei,array,notnull" json:"imei" list:"sort,filter"`
	CheckedValue       string     `bun:"checked_value,notnull" json:"checked_value" list:"sort,filter"`
	RouteTrigger       string     `bun:"route_trigger,notnull" json:"route_trigger" list:"sort,filter"`
	ZoneTrigger        string     `bun:"zone_trigger,notnull" json:"zone_trigger" list:"sort,filter"`
	Routes             StringList `bun:"routes,array,notnull" json:"routes" list:"sort,filter"`
	Zones              StringList `bun:"zones,array,notnull" json:"zones" list:"sort,filter"`
	NotifySystem       bool       `bun:"notify_system,notnull" json:"notify_system" list:"sort,filter"`
	NotifyEmail        bool       `bun:"notify_email,notnull" json:"notify_email" list:"sort,filter"`
	NotifyEmailAddress string     `bun:"notify_email_address,notnull" json:"notify_email_address" list:"sort,filter"`
	NotifySMS          bool       `bun:"notify_sms,notnull" json:"notify_sms" list:"sort,filter"`
	NotifySMSNumber    string     `bun:"notify_sms_number,notnull" json:"notify_sms_number" list:"sort,filter"`
	NotifyTelegram     bool       `bun:"notify_telegram,notnull" json:"notify_telegram" list:"sort,filter"`
	EmailTemplateID    int64      `bun:"email_template_id,notnull" json:"email_template_id" list:"sort,filter"`
	SMSTemplateID      int64      `bun:"sms_template_id,notnull" json:"sms_template_id" list:"sort,filter"`
	CmdSend            bool       `bun:"cmd_send,notnull" json:"cmd_send" list:"sort,filter"`
	CmdGateway         string     `bun:"cmd_gateway,notnull" json:"cmd_gateway" list:"sort,filter"`
	CmdType            string     `bun:"cmd_type,notnull" json:"cmd_type" list:"sort,filter"`
	CmdString          string     `bun:"cmd_string,notnull" json:"cmd_string" list:"sort,filter"`
}

var _ bun.BeforeAppendModelHook = (*Event)(nil)

// BeforeAppendModel writes nil lists as empty arrays, a nil day_time as {}
// and empty enum fields as the schema's defaults.
func (e *Event) BeforeAppendModel(context.Context, bun.Query) error {
	e.WeekDays = e.WeekDays.orEmpty()
	e.IMEI = e.IMEI.orEmpty()
	e.Routes = e.Routes.orEmpty()
	e.Zones = e.Zones.orEmpty()
	if e.DayTime == nil {
		e.DayTime = JSONObject{}
	}
	e.RouteTrigger = orDefault(e.RouteTrigger, "off")
	e.ZoneTrigger = orDefault(e.ZoneTrigger, "off")
	e.CmdGateway = orDefault(e.CmdGateway, "gprs")
	e.CmdType = orDefault(e.CmdType, "ascii")
	return nil
}

// Triggers returns the allowed values of route_trigger and zone_trigger.
func Triggers() []string { return []string{"off", "in", "out"} }

// CmdGateways returns the allowed values of cmd_gateway.
func CmdGateways() []string { return []string{"gprs", "sms"} }

// CmdTypes returns the allowed values of cmd_type.
func CmdTypes() []string { return []string{"ascii", "hex"} }

// WeekDays returns the allowed values of week_days, Monday first.
func WeekDays() []string { return []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"} }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// EventByID returns the event rule with the given id when scope (an events
// scope) admits it. A rule that does not exist and one outside the scope
// are both ErrNotFound. It may run on a read replica (Store.WithReplicas).
// It returns policy.ErrScope for a scope of another
// resource or one storage did not compile, and ErrUnavailable when the
// database cannot be reached.
func (s *Store) EventByID(ctx context.Context, scope policy.Scope, id int64) (Event, error) {
	var ev Event
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		q, err := rs.scopedSelect(scope, Events.Descriptor, &ev)
		if err != nil {
			return err
		}
		// id is an int64 the api parsed: a data exception is the server's.
		return translateOwn(q.Where(Events.col(Events.id.Name)+" = ?", id).Limit(1).Scan(ctx))
	})
	if err != nil {
		return Event{}, err
	}
	return ev, nil
}
