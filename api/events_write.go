package api

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/rules"
	"github.com/fleetapi/fleetapi/storage"
)

// registerEventWrites declares POST /events, PATCH /events/{id} and
// DELETE /events/{id} (docs/design.md §15).
func (s *Server) registerEventWrites(g *fuego.Server) {
	who := " Subaccounts write no event rules. Needs the token permission %s and write access."
	fuego.Post(g, "/events", func(c fuego.ContextWithBody[EventInput]) (*Envelope[Event], error) {
		row, replayed, err := eventResource.create(s, c.Request(), c.Context(), s.cfg.Store.CreateEvent)
		if err != nil {
			return nil, err
		}
		return createdEnvelope(c, wireEvent(row), replayed), nil
	}, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_event"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Create an event rule"),
		fuego.OptionDescription("Creates an event rule for account_id (default: the caller's own account), an account in the caller's " +
			"management scope (404 outside) that is not a subaccount. Every device of imei must be that account's (400 VALIDATION_FAILED " +
			"otherwise, the same answer for an unknown IMEI and another tenant's). checked_value, week_days and day_time are judged as " +
			"the rules evaluate them (a value that could never fire is refused, with the reason). Counted by the account's events quota " +
			"(403 QUOTA_EXCEEDED). The rule is in force from the next reading evaluated, on every server. Audited (event.create)." +
			fmt.Sprintf(who, "POST /events")),
		idempotentCreate(idempotencyKeyHeader),
		takesBody(eventInputSchema(true), exampleEventInput()),
		respondsOne(eventSchema(), exampleWireEvent()),
	})...)
	fuego.Patch(g, "/events/{id}", func(c fuego.ContextWithBody[EventFields]) (*Envelope[Event], error) {
		row, err := eventResource.change(s, c, c.Context(), s.cfg.Store.UpdateEvent)
		if err != nil {
			return nil, err
		}
		return &Envelope[Event]{Data: wireEvent(row)}, nil
	}, routeOptions(changeErrors(), errorResponses(http.StatusConflict), []fuego.RouteOption{
		fuego.OptionOperationID("update_event"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Change an event rule"),
		fuego.OptionDescription("Changes the fields named in the body of an event rule in the caller's scope (404 outside, like a missing id); " +
			"the rule is then validated whole, as a create's body. A change of type or checked_value starts the rule afresh on every device " +
			"(its state, such as a condition that fired and has not ended, is forgotten). Audited (event.update)." +
			fmt.Sprintf(who, "PATCH /events/{id}")),
		takesBody(eventInputSchema(false), EventFields{CheckedValue: "100"}),
		respondsOne(eventSchema(), exampleWireEvent()),
	}, pathID("id", "Event rule id.", exampleEvent().EventID))...)
	fuego.Delete(g, "/events/{id}", func(c fuego.ContextNoBody) (any, error) {
		return eventResource.remove(s, c, s.cfg.Store.DeleteEvent)
	}, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("delete_event"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Delete an event rule"),
		fuego.OptionDescription("Deletes an event rule in the caller's scope (404 outside, like a missing id): it fires no more from the next " +
			"reading evaluated. Audited (event.delete)." + fmt.Sprintf(who, "DELETE /events/{id}")),
		fuego.OptionDefaultStatusCode(http.StatusNoContent), respondsNoContent(),
	}, pathID("id", "Event rule id.", exampleEvent().EventID))...)
}

// EventFields are the fields of an event rule a client writes: the body of
// PATCH /events/{id} (the fields present replace the rule's) and, with
// account_id, of POST /events (absent fields take their defaults).
type EventFields struct {
	Type               string       `json:"type,omitempty"`
	Name               string       `json:"name,omitempty"`
	Active             bool         `json:"active,omitempty"`
	WeekDays           []string     `json:"week_days,omitempty"`
	DayTime            DayTimeInput `json:"day_time,omitempty"`
	IMEI               []string     `json:"imei,omitempty"`
	CheckedValue       string       `json:"checked_value,omitempty"`
	RouteTrigger       string       `json:"route_trigger,omitempty"`
	ZoneTrigger        string       `json:"zone_trigger,omitempty"`
	Routes             []string     `json:"routes,omitempty"`
	Zones              []string     `json:"zones,omitempty"`
	NotifySystem       bool         `json:"notify_system,omitempty"`
	NotifyEmail        bool         `json:"notify_email,omitempty"`
	NotifyEmailAddress string       `json:"notify_email_address,omitempty"`
	NotifySMS          bool         `json:"notify_sms,omitempty"`
	NotifySMSNumber    string       `json:"notify_sms_number,omitempty"`
	NotifyTelegram     bool         `json:"notify_telegram,omitempty"`
	EmailTemplateID    int64        `json:"email_template_id,omitempty"`
	SMSTemplateID      int64        `json:"sms_template_id,omitempty"`
	CmdSend            bool         `json:"cmd_send,omitempty"`
	CmdGateway         string       `json:"cmd_gateway,omitempty"`
	CmdType            string       `json:"cmd_type,omitempty"`
	CmdString          string       `json:"cmd_string,omitempty"`
}

// EventInput is the body of POST /events.
type EventInput struct {
	// AccountID is the rule's account; absent: the caller's own.
	AccountID *int64 `json:"account_id,omitempty"`
	EventFields
}

// DayTimeInput is an event rule's daily window: "HH:MM" each, both or
// neither.
type DayTimeInput struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// eventTypes are the types of event rules (docs/design.md §14).
func eventTypes() []string {
	return []string{rules.Overspeed, rules.IgnitionOn, rules.IgnitionOff, rules.SOS, rules.DoorOpen, rules.Param, rules.FuelDrop,
		rules.Stopped, rules.ConnectionNo, rules.ZoneIn, rules.ZoneOut, rules.RouteOut}
}

// hhmm is a time of day of an event rule's window (rules.DayTime).
const hhmm = `^([01][0-9]|2[0-3]):[0-5][0-9]$`

// hhmmProps states day_time's from and to: "HH:MM" each.
func hhmmProps() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		five := uint64(5)
		for _, p := range []string{"from", "to"} {
			v := s.Properties[p].Value
			v.Pattern, v.MinLength, v.MaxLength = hhmm, five, &five
		}
	})
}

// checkedValueOfTypes states that a rule created of a type that compares
// with checked_value names one (rules.Check reads it; its form per type is
// the server's to judge).
func checkedValueOfTypes(s *openapi3.Schema) {
	ifType := openapi3.NewObjectSchema()
	ifType.Required = []string{"type"}
	ifType.Properties = openapi3.Schemas{"type": openapi3.NewSchemaRef("", &openapi3.Schema{
		Enum: anys([]string{rules.Overspeed, rules.FuelDrop, rules.Stopped, rules.ConnectionNo, rules.Param})})}
	then := openapi3.NewObjectSchema()
	then.Required = []string{"checked_value"}
	then.Properties = openapi3.Schemas{"checked_value": openapi3.NewSchemaRef("", &openapi3.Schema{MinLength: 1})}
	s.If, s.Then = openapi3.NewSchemaRef("", ifType), openapi3.NewSchemaRef("", then)
}

// hexCommand is a command of cmd_type hex.
var hexCommand = regexp.MustCompile(`^([0-9A-Fa-f]{2})*$`)

// zoneIDPattern is the shape of a zone id of an event rule or a report
// (as the reads show them); a write then checks that each names a zone of
// the row's account (docs/decisions.md "Zone ids of rules and reports").
var zoneIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,50}$`)

// eventResource declares the writes of event rules.
var eventResource = configResource[storage.Event, EventInput, EventFields]{
	what: "event rule", route: "POST /events", resource: storage.Events.Resource(),
	validate: func(in EventInput, faults textFaults) (configRequest[storage.Event], error) {
		v := fieldCheck{}
		v.account(in.AccountID)
		e := eventOf(v, in.EventFields)
		return configRequest[storage.Event]{Row: e, Account: in.AccountID}, v.done("event rule", faults)
	},
	patch: func(in EventFields, faults textFaults) (storage.Event, error) {
		v := fieldCheck{}
		e := eventOf(v, in)
		return e, v.done("event rule", faults)
	},
	owner:    func(e *storage.Event, account int64) { e.AccountID = account },
	conflict: "an event rule with this name already exists in the account",
}

// eventOf validates an event rule's fields into v and returns the row.
func eventOf(v fieldCheck, in EventFields) storage.Event {
	e := storage.Event{
		Type: in.Type, Name: v.name("name", in.Name), Active: in.Active, CheckedValue: in.CheckedValue,
		RouteTrigger: cmp.Or(in.RouteTrigger, "off"), ZoneTrigger: cmp.Or(in.ZoneTrigger, "off"),
		NotifySystem: in.NotifySystem, NotifyEmail: in.NotifyEmail, NotifyEmailAddress: in.NotifyEmailAddress,
		NotifySMS: in.NotifySMS, NotifySMSNumber: in.NotifySMSNumber, NotifyTelegram: in.NotifyTelegram,
		EmailTemplateID: in.EmailTemplateID, SMSTemplateID: in.SMSTemplateID, CmdSend: in.CmdSend,
		CmdGateway: cmp.Or(in.CmdGateway, "gprs"), CmdType: cmp.Or(in.CmdType, "ascii"), CmdString: in.CmdString,
		DayTime: storage.JSONObject{},
	}
	v.oneOf("type", e.Type, eventTypes())
	e.WeekDays = v.list("week_days", in.WeekDays, 7, 3, nil, "a day name")
	for i, d := range e.WeekDays {
		if _, bad := v["week_days"]; !bad && !slices.Contains(storage.WeekDays(), d) {
			v["week_days"] = fmt.Sprintf("entry %d: one of %s", i, strings.Join(quoted(storage.WeekDays()), ", "))
		}
	}
	if in.DayTime.From != "" || in.DayTime.To != "" {
		e.DayTime = storage.JSONObject{"from": in.DayTime.From, "to": in.DayTime.To}
	}
	// The window as the rules read it (any evaluable type reads it).
	if ok, reason := rules.Check(rules.Rule{Type: rules.IgnitionOn, DayTime: rules.DayTime(in.DayTime)}); !ok {
		v["day_time"] = reason
	}
	// checked_value as the rules read it: a value that could never fire
	// is refused (the types kept until places exist read none).
	if _, badType := v["type"]; !badType && !slices.Contains([]string{rules.ZoneIn, rules.ZoneOut, rules.RouteOut}, e.Type) {
		if ok, reason := rules.Check(rules.Rule{Type: e.Type, CheckedValue: e.CheckedValue}); !ok {
			v["checked_value"] = reason
		}
	}
	v.text("checked_value", e.CheckedValue, maxTextLen)
	v.oneOf("route_trigger", e.RouteTrigger, storage.Triggers())
	v.oneOf("zone_trigger", e.ZoneTrigger, storage.Triggers())
	e.IMEI = v.list("imei", in.IMEI, maxDevicesNamed, 0, imeiPattern, "an IMEI: 1 to 50 letters, digits or '-'")
	e.Routes = v.list("routes", in.Routes, maxListItems, maxItemLen, nil, fmt.Sprintf("1 to %d characters", maxItemLen))
	e.Zones = v.list("zones", in.Zones, maxListItems, 0, zoneIDPattern, "a zone id: 1 to 50 letters, digits, '_' or '-'")
	v.emails("notify_email_address", e.NotifyEmailAddress)
	v.text("notify_sms_number", e.NotifySMSNumber, maxItemLen)
	if e.EmailTemplateID < 0 {
		v["email_template_id"] = "0 (the default) or more"
	}
	if e.SMSTemplateID < 0 {
		v["sms_template_id"] = "0 (the default) or more"
	}
	v.oneOf("cmd_gateway", e.CmdGateway, storage.CmdGateways())
	v.oneOf("cmd_type", e.CmdType, storage.CmdTypes())
	v.text("cmd_string", e.CmdString, maxTextLen)
	if _, bad := v["cmd_string"]; !bad && e.CmdType == "hex" && !hexCommand.MatchString(e.CmdString) {
		v["cmd_string"] = "pairs of hexadecimal digits (cmd_type hex)"
	}
	return e
}

// eventInputSchema is the EventInput component (create), or EventPatch
// (change).
func eventInputSchema(create bool) wireType {
	fields := map[string][]fieldOpt{
		"type":                 {enum(eventTypes()...), desc("Kind of event (docs/design.md §14); required on a create.")},
		"name":                 {minLen(1), maxLen(maxNameLen), desc("Name, unique in the account (409 otherwise); required on a create.")},
		"active":               {desc("Whether the rule is on; defaults to false.")},
		"week_days":            {itemEnum(storage.WeekDays()...), maxItems(7), uniqueItems(), desc("Days on which the rule applies, each once; empty: every day.")},
		"day_time":             {hhmmProps(), desc(`Daily window {"from": "HH:MM", "to": "HH:MM"} in the account's time zone, both or neither; from after to spans midnight.`)},
		"imei":                 {maxItems(maxDevicesNamed), uniqueItems(), itemPattern(imeiPattern.String()), itemLen(1, 50), desc("IMEIs of the account's devices the rule watches, each once; empty: every device of the account.")},
		"checked_value":        {maxLen(maxTextLen), desc("Value the rule compares with, as its type reads it (a number of km/h, minutes, a param expression).")},
		"route_trigger":        {enum(storage.Triggers()...), desc(`Trigger on the routes; defaults to "off".`)},
		"zone_trigger":         {enum(storage.Triggers()...), desc(`Trigger on the zones; defaults to "off".`)},
		"routes":               {maxItems(maxListItems), uniqueItems(), itemLen(1, maxItemLen), desc("Routes the rule watches.")},
		"zones":                {maxItems(maxListItems), uniqueItems(), itemPattern(zoneIDPattern.String()), itemLen(1, 50), desc("Ids of zones of the rule's account (GET /zones) the rule watches; an id that is not a zone of the account (absent, deleted, another account's) is a 400 VALIDATION_FAILED naming zones.")},
		"notify_system":        {desc("Whether to notify in the system.")},
		"notify_email":         {desc("Whether to notify by e-mail.")},
		"notify_email_address": {maxLen(maxTextLen), desc("E-mail addresses separated by commas (at most 10), or empty.")},
		"notify_sms":           {desc("Whether to notify by SMS.")},
		"notify_sms_number":    {maxLen(maxItemLen), desc("Where SMS notifications go.")},
		"notify_telegram":      {desc("Whether to notify by Telegram.")},
		"email_template_id":    {minimum(0), desc("E-mail template (0: the default).")},
		"sms_template_id":      {minimum(0), desc("SMS template (0: the default).")},
		"cmd_send":             {desc("Whether to send a command to the device.")},
		"cmd_gateway":          {enum(storage.CmdGateways()...), desc(`Channel of the command; defaults to "gprs".`)},
		"cmd_type":             {enum(storage.CmdTypes()...), desc(`Encoding of the command; defaults to "ascii".`)},
		"cmd_string":           {maxLen(maxTextLen), desc("The command (pairs of hexadecimal digits for cmd_type hex).")},
	}
	if !create {
		return wireType{name: "EventPatch", required: []string{}, minProperties: 1, value: EventFields{}, fields: fields,
			description: "The fields of an event rule to change (docs/design.md §15); at least one. Field names are exact; unknown, repeated and null keys are rejected."}
	}
	fields["account_id"] = []fieldOpt{minimum(1), desc("The rule's account, in the caller's management scope and not a subaccount; defaults to the caller's own.")}
	return wireType{name: "EventInput", value: EventInput{}, fields: fields, required: []string{"type", "name"}, complete: checkedValueOfTypes,
		description: "An event rule to create (docs/design.md §15). Absent fields take their defaults. Field names are exact; unknown, repeated and null keys are rejected."}
}

// exampleEventInput is the request example of POST /events.
func exampleEventInput() EventInput {
	e := exampleEvent()
	return EventInput{EventFields: EventFields{Type: e.Type, Name: e.Name, Active: true, WeekDays: e.WeekDays, DayTime: DayTimeInput{From: "06:00", To: "22:00"},
		IMEI: e.IMEI, CheckedValue: e.CheckedValue, NotifySystem: true, NotifyEmail: true, NotifyEmailAddress: e.NotifyEmailAddress}}
}
