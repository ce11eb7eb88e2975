package api

import (
	"fmt"
	"maps"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// wireType is a component schema generated from a Go wire type: the type
// gives the properties and their JSON types, fields adds what Go types do
// not say (descriptions, enums, bounds, formats, null).
type wireType struct {
	name, description string
	value             any
	// open marks an object that may carry properties beyond the listed
	// ones (additionalProperties: true); every other object is closed.
	open bool
	// required, when set, replaces the generated list (every field without
	// omitempty).
	required []string
	fields   map[string][]fieldOpt
}

// fieldOpt refines the schema of one property.
type fieldOpt func(*openapi3.SchemaRef)

// schemaOpt is a fieldOpt that changes the property's inline schema.
func schemaOpt(f func(*openapi3.Schema)) fieldOpt {
	return func(r *openapi3.SchemaRef) {
		if r.Value != nil {
			f(r.Value)
		}
	}
}

func desc(d string) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Description = d }) }

func enum(values ...string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Enum = anys(values) })
}

func itemEnum(values ...string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Items.Value.Enum = anys(values) })
}

func format(f string) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Format = f }) }

func minimum(n float64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Min = &n }) }

func maxLen(n uint64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.MaxLength = &n }) }

func minLen(n uint64) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.MinLength = n }) }

func minItemsOne() fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.MinItems = 1 }) }

func pattern(p string) fieldOpt { return schemaOpt(func(s *openapi3.Schema) { s.Pattern = p }) }

// nullable lets the property be null as well (OpenAPI 3.1: a type list).
func nullable() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		if !s.Type.Includes(openapi3.TypeNull) {
			t := append(s.Type.Slice(), openapi3.TypeNull)
			s.Type = (*openapi3.Types)(&t)
		}
	})
}

// typed replaces the generated type (for types with their own JSON form).
func typed(t string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) { s.Type = &openapi3.Types{t}; s.Properties = nil; s.Required = nil })
}

// ref replaces the property by a reference to another component schema.
func ref(name string) fieldOpt {
	return func(r *openapi3.SchemaRef) { *r = *componentRef(name) }
}

// freeObject is a JSON object with any properties.
func freeObject() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		yes := true
		s.Type = &openapi3.Types{openapi3.TypeObject}
		s.Properties = nil
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: &yes}
	})
}

func anys[T any](values []T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func componentRef(name string) *openapi3.SchemaRef {
	return openapi3.NewSchemaRef("#/components/schemas/"+name, nil)
}

// serviceFields are the fields of a service record (DESIGN §5), shared by
// Service and DueService.
func serviceFields() map[string][]fieldOpt {
	km, hours, days := " (kilometres)", " (hours)", " (days)"
	return map[string][]fieldOpt{
		"service_id":            {desc("Id of the service record."), minimum(1)},
		"imei":                  {desc("IMEI of the device (object) the service belongs to.")},
		"name":                  {desc("Name of the service, unique per device.")},
		"odo":                   {desc("Whether the odometer criterion is on.")},
		"odo_interval":          {desc("Service interval" + km + ".")},
		"odo_last":              {desc("Odometer at the last service" + km + ".")},
		"engh":                  {desc("Whether the engine-hours criterion is on.")},
		"engh_interval":         {desc("Service interval" + hours + ".")},
		"engh_last":             {desc("Engine hours at the last service" + hours + ".")},
		"days":                  {desc("Whether the calendar criterion is on.")},
		"days_interval":         {desc("Service interval" + days + ".")},
		"days_last":             {typed(openapi3.TypeString), format("date"), nullable(), desc("Day of the last service (YYYY-MM-DD), or null when unknown.")},
		"odo_left":              {desc("Whether to warn when odo_left_num kilometres or fewer remain.")},
		"odo_left_num":          {desc("Warning threshold" + km + ".")},
		"engh_left":             {desc("Whether to warn when engh_left_num hours or fewer remain.")},
		"engh_left_num":         {desc("Warning threshold" + hours + ".")},
		"days_left":             {desc("Whether to warn when days_left_num days or fewer remain.")},
		"days_left_num":         {desc("Warning threshold" + days + ".")},
		"update_last":           {desc("Whether the last-service values are updated automatically when the service is done.")},
		"notify_service_expire": {desc("Whether a notification is sent when the service expires.")},
	}
}

// wireTypes lists the component schemas generated from Go types.
func wireTypes() []wireType {
	due := serviceFields()
	maps.Copy(due, map[string][]fieldOpt{
		"object_name":    {desc("Name of the device (object).")},
		"odo_remaining":  {nullable(), desc("Kilometres left until the service: odo_interval − (current odometer − odo_last); null when the criterion is off.")},
		"engh_remaining": {nullable(), desc("Engine hours left until the service; null when the criterion is off.")},
		"days_remaining": {nullable(), desc("Days left until the service; null when the criterion is off or days_last is unknown.")},
		"due":            {itemEnum(storage.DueOdo, storage.DueEngh, storage.DueDays), minItemsOne(), desc("The due criteria, in this order; never empty.")},
		"state":          {enum(storage.DueExpired, storage.DueSoon), desc(`"expired" when some remaining is zero or less, else "soon" (within a *_left_num threshold).`)},
	})
	return []wireType{
		{name: "Account", value: Account{}, description: "The authenticated account (spec §2.2).", fields: map[string][]fieldOpt{
			"id":                {desc("Account id."), minimum(1)},
			"username":          {desc("Login name of the account.")},
			"email":             {desc("E-mail address of the account, or empty.")},
			"manager_id":        {minimum(0)},
			"type":              {enum("admin", "manager", "user", "subaccount"), desc("Place of the account in the account tree.")},
			"active":            {enum("true", "false"), desc(`"true" when the account may use the API.`)},
			"account_expire":    {enum("true", "false"), desc(`"true" when the account expires on account_expire_dt.`)},
			"account_expire_dt": {pattern(`^([0-9]{4}-[0-9]{2}-[0-9]{2})?$`)},
			"permissions":       {ref("Permissions")},
		}},
		{name: "Permissions", value: Permissions{}, description: "The effective permission set of the token and its account, computed by the policy.", fields: map[string][]fieldOpt{
			"read_only":  {desc("Whether the account is read-only (no write route is allowed).")},
			"privileges": {itemEnum("event_notifications", "reports"), desc("Privileges the account holds (users, managers and admins hold all).")},
			"token":      {desc("The token's permissions, as granted: `*`, `GET *` or `METHOD /route`.")},
			"routes":     {desc(`Whether each route ("METHOD /route") is allowed for this token and account.`)},
		}},
		{name: "Service", value: Service{}, open: true, fields: serviceFields(),
			description: "A maintenance service record (spec §2.3). The record's extra properties are merged in, never overriding a named field."},
		{name: "DueService", value: dueServiceJSON{}, open: true, fields: due,
			description: "A due maintenance record (spec §2.4): the service record (extra properties merged in, as in the service list), the device's name, what remains of each criterion, and why it is due."},
		{name: "Report", value: storage.Report{}, description: "A report definition (spec §2.6).", fields: map[string][]fieldOpt{
			"report_id":              {desc("Id of the report."), minimum(1)},
			"name":                   {desc("Name of the report.")},
			"type":                   {desc(`Kind of report, for example "drives_stops".`)},
			"format":                 {desc(`Output format, for example "pdf".`)},
			"show_addresses":         {desc("Whether addresses are shown.")},
			"zones_addresses":        {desc("Whether zone names replace addresses.")},
			"show_trip_image":        {desc("Whether a trip map is included.")},
			"stop_duration":          {desc("Shortest stop reported (minutes).")},
			"speed_limit":            {desc("Speed limit (km/h).")},
			"imei":                   {desc("IMEIs of the devices the report covers.")},
			"zone_ids":               {desc("Zones the report covers.")},
			"sensor_names":           {desc("Sensors the report covers.")},
			"data_items":             {desc("Data columns of the report.")},
			"schedule_period":        {enum(storage.SchedulePeriods()...), desc(`Schedule: "" (none), "d" (daily), "w" (weekly) or "dw" (both).`)},
			"schedule_email_address": {desc("Where scheduled reports are sent.")},
			"dt_schedule_d":          {nullable(), desc("Next daily run (RFC 3339), or null.")},
			"dt_schedule_w":          {nullable(), desc("Next weekly run (RFC 3339), or null.")},
		}},
		{name: "Event", value: storage.Event{}, description: "An event rule (spec §2.7, §6).", fields: map[string][]fieldOpt{
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
		}},
		{name: "Object", value: storage.Object{}, description: "A device (object) of the fleet (DESIGN §9).", fields: map[string][]fieldOpt{
			"id":           {desc("Id of the device."), minimum(1)},
			"imei":         {minLen(1), maxLen(50), desc("IMEI of the device, unique across the platform.")},
			"account_id":   {minimum(1), desc("Id of the account that owns the device.")},
			"name":         {desc("Name of the device.")},
			"odometer":     {minimum(0), desc("Current odometer (km).")},
			"engine_hours": {minimum(0), desc("Current engine hours (h).")},
		}},
		{name: "Passenger", value: storage.Passenger{}, description: "A passenger (spec §2.5).", fields: map[string][]fieldOpt{
			"passenger_id":              {desc("Id of the passenger."), minimum(1)},
			"passenger_name":            {minLen(1), maxLen(100), desc("Name, trimmed.")},
			"passenger_assign_id":       {maxLen(50), desc("Assignment id (for example a card), in Unicode NFC and upper-case; unique in the account when not empty.")},
			"passenger_idn":             {desc("Identity number.")},
			"passenger_address":         {desc("Address.")},
			"passenger_phone":           {desc("Phone number.")},
			"passenger_email":           {desc("E-mail address, or empty.")},
			"passenger_desc":            {maxLen(1000), desc("Description.")},
			"passenger_client_id":       {desc("The client's own id of the passenger.")},
			"passenger_active":          {desc("Whether the passenger is active.")},
			"passenger_pickup_point_id": {minimum(1), desc("Pickup point, or null.")},
		}},
		{name: "PassengerInput", value: PassengerInput{}, required: []string{"passenger_name"},
			description: "A passenger to create (spec §4.6). Absent and null fields take their defaults. Field names are exact " +
				"(case-sensitive); unknown and repeated keys are rejected. Strings must be valid UTF-8 without NUL characters.",
			fields: map[string][]fieldOpt{
				"passenger_name":            {typed(openapi3.TypeString), minLen(1), maxLen(100), desc("Required; 1 to 100 characters after trimming, at least one of them visible. Whitespace, control and zero-width characters at the ends are trimmed.")},
				"passenger_assign_id":       {maxLen(50), desc("At most 50 characters after trimming; stored in Unicode NFC and upper-case, so composed and decomposed spellings are one id; unique in the account when not empty.")},
				"passenger_idn":             {desc("Identity number.")},
				"passenger_address":         {desc("Address.")},
				"passenger_phone":           {desc("Phone number.")},
				"passenger_email":           {desc("A valid e-mail address (no display name), or empty.")},
				"passenger_desc":            {maxLen(1000), desc("At most 1000 characters.")},
				"passenger_client_id":       {desc("The client's own id of the passenger.")},
				"passenger_active":          {desc("Defaults to true.")},
				"passenger_pickup_point_id": {minimum(1), desc("1 or more, or null (the default).")},
			}},
		{name: "Error", value: Error{}, description: "What went wrong (DESIGN §4).", fields: map[string][]fieldOpt{
			"code":    {enum(errorCodes()...), desc("Machine-readable error code.")},
			"message": {desc("Human-readable explanation.")},
			"details": {freeObject(), desc(`Facts about the failure, for example {"parameter": "per_page", "reason": "must be between 1 and 500"}.`)},
		}},
	}
}

// errorCodes lists the error codes of the error table, sorted.
func errorCodes() []string { return slices.Sorted(maps.Keys(codeStatus)) }

// wireSchemas generates the component schemas of wireTypes.
func wireSchemas() (openapi3.Schemas, error) {
	gen := openapi3gen.NewGenerator(openapi3gen.SchemaCustomizer(fuego.SchemaCustomizer))
	out := openapi3.Schemas{}
	for _, w := range wireTypes() {
		r, err := gen.NewSchemaRefForValue(w.value, nil)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", w.name, err)
		}
		s := r.Value
		s.Description = w.description
		for name, p := range s.Properties {
			normalizeNull(p.Value)
			opts, ok := w.fields[name]
			if !ok {
				return nil, fmt.Errorf("schema %s: property %q has no entry in wireTypes (describe it)", w.name, name)
			}
			for _, o := range opts {
				o(p)
			}
			if p.Value == nil {
				continue // a reference
			}
			if p.Value.Description == "" {
				return nil, fmt.Errorf("schema %s: property %q has no description", w.name, name)
			}
			closeObjects(p.Value)
		}
		for name := range w.fields {
			if _, ok := s.Properties[name]; !ok {
				return nil, fmt.Errorf("schema %s: wireTypes names %q, which the Go type does not have", w.name, name)
			}
		}
		if w.required != nil {
			s.Required = w.required
		}
		open := w.open
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: &open}
		out[w.name] = openapi3.NewSchemaRef("", s)
	}
	return out, nil
}

// normalizeNull states null the OpenAPI 3.1 way: a pointer (which the
// generator marks nullable) may be null; a list or map (which Fuego marks
// nullable) may not: the wire types encode them as [] and {}.
func normalizeNull(s *openapi3.Schema) {
	t := s.Type.Slice()
	t = slices.DeleteFunc(slices.Clone(t), func(x string) bool { return x == openapi3.TypeNull })
	if s.Nullable {
		t = append(t, openapi3.TypeNull)
		s.Nullable = false
	}
	if len(t) == 0 {
		s.Type = nil
		return
	}
	s.Type = (*openapi3.Types)(&t)
}

// closeObjects gives an inline object schema without free properties
// additionalProperties: false (maps keep their value schema).
func closeObjects(s *openapi3.Schema) {
	if s.Type.Includes(openapi3.TypeObject) && s.AdditionalProperties.Has == nil && s.AdditionalProperties.Schema == nil {
		no := false
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
	}
}
