package api

import (
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/rules"
	"github.com/fleetapi/fleetapi/storage"
)

// registerEvents declares GET /events (a list route of the events
// resource) and GET /events/{id}.
func (s *Server) registerEvents(g *fuego.Server) {
	listRoute(g, s, storage.Events, events, authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_events"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Paged list of event rules"),
		fuego.OptionDescription("The event rules the caller may see. Needs the token permission GET /events; a subaccount also needs the event_notifications privilege."),
		respondsPage(eventSchema(), []Event{exampleWireEvent()}),
	})
	fuego.Get(g, "/events/{id}", s.getEvent, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_event"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Read one event rule"),
		fuego.OptionDescription("One event rule by id. A rule outside the caller's scope is 404, like one that does not exist. " +
			"Needs the token permission GET /events/{id}; a subaccount also needs the event_notifications privilege."),
		respondsOne(eventSchema(), exampleWireEvent()),
	}, pathID("id", "Event rule id.", exampleEvent().EventID))...)
}

// getEvent answers GET /events/{id}. A rule outside the caller's scope is
// NOT_FOUND, exactly like one that does not exist.
func (s *Server) getEvent(c fuego.ContextNoBody) (*Envelope[Event], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Events.Resource())
	if err != nil {
		return nil, err
	}
	ev, err := s.cfg.Store.EventByID(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	missing, err := s.cfg.Store.EventZonesMissing(ctx, ev)
	if err != nil {
		return nil, err
	}
	return &Envelope[Event]{Data: wireEventMissing(ev, missing)}, nil
}

// Event is the wire form of an event rule (docs/api.md §7, docs/design.md
// §14): the stored rule and two computed fields, whether the rules
// package can evaluate it and, when not, why (rules.Check). They are not
// stored, so no list filters or sorts by them.
type Event struct {
	storage.Event
	// Evaluable is false for a rule that never fires: a malformed
	// checked_value, week_days or day_time, a zone rule naming no zone or
	// one not of its account, route_out, or an unknown type.
	Evaluable bool `json:"evaluable"`
	// Reason says why the rule is not evaluable; empty when it is.
	Reason string `json:"reason"`
}

// wireEvent is the wire form of a stored event rule in a list, whose
// zones are not looked up (GET /events/{id} does: wireEventMissing).
func wireEvent(ev storage.Event) Event { return wireEventMissing(ev, nil) }

// wireEventMissing is the wire form of a stored event rule whose zones
// missing are not zones of its account (storage.EventZonesMissing).
func wireEventMissing(ev storage.Event, missing []string) Event {
	r := ev.Rule()
	if missing != nil {
		r.ZonesMissing = missing
	}
	ok, reason := rules.Check(r)
	if ok {
		reason = ""
	}
	return Event{Event: ev, Evaluable: ok, Reason: reason}
}

// events is the wire form of event rules.
func events(rows []storage.Event) []Event { return wireRows(rows, wireEvent) }

// eventSchema is the Event component.
func eventSchema() wireType {
	return wireType{name: "Event", value: Event{}, description: "An event rule (docs/api.md §7).", fields: map[string][]fieldOpt{
		"evaluable": {desc("Computed, not stored (no filter, no sort): whether the rule can fire (docs/design.md §14). false for a malformed " +
			"checked_value, week_days or day_time, for zone_in and zone_out naming no zone or a zone that is not of the rule's account (GET /events/{id} " +
			"looks the zones up; the list does not), and for route_out (no routes resource) or an unknown type.")},
		"reason":               {desc("Why the rule is not evaluable, for people; empty when it is.")},
		"event_id":             {desc("Id of the event rule."), minimum(1)},
		"type":                 {desc(`Kind of event, for example "overspeed".`)},
		"name":                 {desc("Name of the rule.")},
		"active":               {desc("Whether the rule is on.")},
		"week_days":            {itemEnum(storage.WeekDays()...), desc("Days on which the rule applies.")},
		"day_time":             {freeObject(), desc("Time-of-day window of the rule.")},
		"imei":                 {desc("IMEIs of the devices the rule watches.")},
		"checked_value":        {desc("Value the rule compares with (for example a speed).")},
		"route_trigger":        {enum(storage.Triggers()...), desc("Trigger on entering or leaving the routes.")},
		"zone_trigger":         {enum(storage.Triggers()...), desc("Trigger on entering or leaving the zones.")},
		"routes":               {desc("Routes the rule watches.")},
		"zones":                {desc("Zones the rule watches.")},
		"notify_system":        {desc("Whether to notify in the system.")},
		"notify_email":         {desc("Whether to notify by e-mail.")},
		"notify_email_address": {desc("Where e-mail notifications go.")},
		"notify_sms":           {desc("Whether to notify by SMS.")},
		"notify_sms_number":    {desc("Where SMS notifications go.")},
		"notify_telegram":      {desc("Whether to notify by Telegram.")},
		"email_template_id":    {desc("E-mail template (0: the default).")},
		"sms_template_id":      {desc("SMS template (0: the default).")},
		"cmd_send":             {desc("Whether to send a command to the device.")},
		"cmd_gateway":          {enum(storage.CmdGateways()...), desc("Channel of the command.")},
		"cmd_type":             {enum(storage.CmdTypes()...), desc("Encoding of the command.")},
		"cmd_string":           {desc("The command.")},
	}}
}

// exampleWireEvent is the example's rule as the wire shows it: an
// overspeed of "90", evaluable (written out, not asked of rules.Check, so
// that the document does not depend on the rules' wording).
func exampleWireEvent() Event { return Event{Event: exampleEvent(), Evaluable: true} }

// exampleEvent is the event rule of the examples; its id is the example of
// the path parameter of GET /events/{id}.
func exampleEvent() storage.Event {
	return storage.Event{
		EventID: 4, Type: "overspeed", Name: "Overspeed", Active: true,
		WeekDays: storage.StringList{"mon", "tue", "wed", "thu", "fri"},
		DayTime:  storage.JSONObject{"from": "06:00", "to": "22:00"},
		IMEI:     storage.StringList{"356938035643809"}, CheckedValue: "90",
		RouteTrigger: "off", ZoneTrigger: "off", Routes: storage.StringList{}, Zones: storage.StringList{},
		NotifySystem: true, NotifyEmail: true, NotifyEmailAddress: "ops@acme.example",
		CmdGateway: "gprs", CmdType: "ascii",
	}
}
