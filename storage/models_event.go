package storage

import (
	"context"

	"github.com/uptrace/bun"
)

// Event is a row of events: an event rule naming a list of devices
// (DESIGN §5). Its lists encode as [] and day_time as {} when empty.
type Event struct {
	bun.BaseModel `bun:"table:events,alias:e"`

	EventID            int64      `bun:"event_id,pk,autoincrement" json:"event_id"`
	AccountID          int64      `bun:"account_id,notnull" json:"-"`
	Type               string     `bun:"type,notnull" json:"type"`
	Name               string     `bun:"name,notnull" json:"name"`
	Active             bool       `bun:"active,notnull" json:"active"`
	WeekDays           StringList `bun:"week_days,array,notnull" json:"week_days"`
	DayTime            JSONObject `bun:"day_time,type:jsonb,notnull" json:"day_time"`
	IMEI               StringList `bun:"imei,array,notnull" json:"imei"`
	CheckedValue       string     `bun:"checked_value,notnull" json:"checked_value"`
	RouteTrigger       string     `bun:"route_trigger,notnull" json:"route_trigger"`
	ZoneTrigger        string     `bun:"zone_trigger,notnull" json:"zone_trigger"`
	Routes             StringList `bun:"routes,array,notnull" json:"routes"`
	Zones              StringList `bun:"zones,array,notnull" json:"zones"`
	NotifySystem       bool       `bun:"notify_system,notnull" json:"notify_system"`
	NotifyEmail        bool       `bun:"notify_email,notnull" json:"notify_email"`
	NotifyEmailAddress string     `bun:"notify_email_address,notnull" json:"notify_email_address"`
	NotifySMS          bool       `bun:"notify_sms,notnull" json:"notify_sms"`
	NotifySMSNumber    string     `bun:"notify_sms_number,notnull" json:"notify_sms_number"`
	NotifyTelegram     bool       `bun:"notify_telegram,notnull" json:"notify_telegram"`
	EmailTemplateID    int64      `bun:"email_template_id,notnull" json:"email_template_id"`
	SMSTemplateID      int64      `bun:"sms_template_id,notnull" json:"sms_template_id"`
	CmdSend            bool       `bun:"cmd_send,notnull" json:"cmd_send"`
	CmdGateway         string     `bun:"cmd_gateway,notnull" json:"cmd_gateway"`
	CmdType            string     `bun:"cmd_type,notnull" json:"cmd_type"`
	CmdString          string     `bun:"cmd_string,notnull" json:"cmd_string"`
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
