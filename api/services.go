package api

import (
	"maps"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// registerServices declares GET /services (a list route of the services
// resource) and GET /services/due.
func (s *Server) registerServices(g *fuego.Server) {
	listRoute(g, s, storage.Services, services, authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_services"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Paged list of maintenance service records"),
		fuego.OptionDescription("The service records the caller may see, one page at a time. Needs the token permission GET /services."),
		respondsPage(serviceSchema(), []Service{{exampleService()}}),
	})
	fuego.Get(g, "/services/due", s.getServicesDue, routeOptions(authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_services_due"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Maintenance records that are due"),
		fuego.OptionDescription("At most 500 due records of the caller's fleet, newest service first, computed for today (UTC). " +
			"A record is due when a criterion's remaining is zero or less, or within its *_left_num threshold. " +
			"Needs the token permission GET /services/due; takes no parameters."),
		respondsList(dueServiceSchema(), []DueService{exampleDueService()}),
	})...)
}

// Service is the wire form of a maintenance service record (docs/api.md §7,
// docs/design.md §5): the named fields, with the record's extra properties merged in
// without overriding them.
type Service struct {
	storage.Service
}

// MarshalJSON encodes the named fields and merges the extra properties.
func (s Service) MarshalJSON() ([]byte, error) { return marshalMerged(s.Service, s.Extra) }

// services is the wire form of service records.
func services(rows []storage.Service) []Service {
	return wireRows(rows, func(r storage.Service) Service { return Service{r} })
}

// maxDue is the most due records GET /services/due returns (docs/api.md §7).
const maxDue = 500

// getServicesDue answers GET /services/due: the caller's due maintenance
// records, newest service first, at most 500, computed for today (UTC).
func (s *Server) getServicesDue(c fuego.ContextNoBody) (*Envelope[[]DueService], error) {
	if err := noParams(c.Request().URL.RawQuery); err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Services.Resource())
	if err != nil {
		return nil, err
	}
	rows, err := s.cfg.Store.DueServices(ctx, scope, s.cfg.Now().UTC(), maxDue)
	if err != nil {
		return nil, err
	}
	return &Envelope[[]DueService]{Data: dueServices(rows)}, nil
}

// DueService is the wire form of a due maintenance record (docs/design.md §5): the
// service record, extra properties included, plus the due fields.
type DueService struct {
	storage.DueService
}

// MarshalJSON encodes the named and due fields and merges the extra
// properties.
func (d DueService) MarshalJSON() ([]byte, error) { return marshalMerged(d.wire(), d.Extra) }

// dueServices is the wire form of due records.
func dueServices(rows []storage.DueService) []DueService {
	return wireRows(rows, func(r storage.DueService) DueService { return DueService{r} })
}

// dueServiceJSON is the wire form of a due record: every field of the
// service record spelled out, so that no later change to the embedding can
// hide one, then the due fields.
type dueServiceJSON struct {
	ServiceID           int64              `json:"service_id"`
	IMEI                string             `json:"imei"`
	Name                string             `json:"name"`
	Odo                 bool               `json:"odo"`
	OdoInterval         int                `json:"odo_interval"`
	OdoLast             int                `json:"odo_last"`
	Engh                bool               `json:"engh"`
	EnghInterval        int                `json:"engh_interval"`
	EnghLast            int                `json:"engh_last"`
	Days                bool               `json:"days"`
	DaysInterval        int                `json:"days_interval"`
	DaysLast            *storage.Date      `json:"days_last"`
	OdoLeft             bool               `json:"odo_left"`
	OdoLeftNum          int                `json:"odo_left_num"`
	EnghLeft            bool               `json:"engh_left"`
	EnghLeftNum         int                `json:"engh_left_num"`
	DaysLeft            bool               `json:"days_left"`
	DaysLeftNum         int                `json:"days_left_num"`
	UpdateLast          bool               `json:"update_last"`
	NotifyServiceExpire bool               `json:"notify_service_expire"`
	ObjectName          string             `json:"object_name"`
	OdoRemaining        *int64             `json:"odo_remaining"`
	EnghRemaining       *int64             `json:"engh_remaining"`
	DaysRemaining       *int64             `json:"days_remaining"`
	Due                 storage.StringList `json:"due"`
	State               string             `json:"state"`
}

// wire returns the named and due fields of d; Due is [] when empty.
func (d DueService) wire() dueServiceJSON {
	s := d.Service
	due := d.Due
	if due == nil {
		due = storage.StringList{}
	}
	return dueServiceJSON{
		ServiceID: s.ServiceID, IMEI: s.IMEI, Name: s.Name,
		Odo: s.Odo, OdoInterval: s.OdoInterval, OdoLast: s.OdoLast,
		Engh: s.Engh, EnghInterval: s.EnghInterval, EnghLast: s.EnghLast,
		Days: s.Days, DaysInterval: s.DaysInterval, DaysLast: s.DaysLast,
		OdoLeft: s.OdoLeft, OdoLeftNum: s.OdoLeftNum,
		EnghLeft: s.EnghLeft, EnghLeftNum: s.EnghLeftNum,
		DaysLeft: s.DaysLeft, DaysLeftNum: s.DaysLeftNum,
		UpdateLast: s.UpdateLast, NotifyServiceExpire: s.NotifyServiceExpire,
		ObjectName: d.ObjectName, OdoRemaining: d.OdoRemaining, EnghRemaining: d.EnghRemaining,
		DaysRemaining: d.DaysRemaining, Due: due, State: d.State,
	}
}

// serviceFields are the fields of a service record (docs/design.md §5), shared by
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

// serviceSchema is the Service component: open, since the record's extra
// properties are merged in.
func serviceSchema() wireType {
	return wireType{name: "Service", value: Service{}, open: true, fields: serviceFields(),
		description: "A maintenance service record (docs/api.md §7). The record's extra properties are merged in, never overriding a named field."}
}

// dueServiceSchema is the DueService component, generated from
// dueServiceJSON (the named and due fields; the extra properties are
// merged in).
func dueServiceSchema() wireType {
	due := serviceFields()
	maps.Copy(due, map[string][]fieldOpt{
		"object_name":    {desc("Name of the device (object).")},
		"odo_remaining":  {nullable(), desc("Kilometres left until the service: odo_interval − (current odometer − odo_last); null when the criterion is off.")},
		"engh_remaining": {nullable(), desc("Engine hours left until the service; null when the criterion is off.")},
		"days_remaining": {nullable(), desc("Days left until the service; null when the criterion is off or days_last is unknown.")},
		"due":            {itemEnum(storage.DueOdo, storage.DueEngh, storage.DueDays), minItemsOne(), desc("The due criteria, in this order; never empty.")},
		"state":          {enum(storage.DueExpired, storage.DueSoon), desc(`"expired" when some remaining is zero or less, else "soon" (within a *_left_num threshold).`)},
	})
	return wireType{name: "DueService", value: dueServiceJSON{}, open: true, fields: due,
		description: "A due maintenance record (docs/api.md §7): the service record (extra properties merged in, as in the service list), the device's name, what remains of each criterion, and why it is due."}
}

// exampleService is the service record of the examples, with an extra
// property.
func exampleService() storage.Service {
	last, err := storage.ParseDate("2025-03-01")
	if err != nil {
		panic(err)
	}
	return storage.Service{
		ServiceID: 12, IMEI: "356938035643809", Name: "Oil change",
		Odo: true, OdoInterval: 10000, OdoLast: 110000,
		Engh: false, EnghInterval: 0, EnghLast: 0,
		Days: true, DaysInterval: 365, DaysLast: &last,
		OdoLeft: true, OdoLeftNum: 500, DaysLeft: true, DaysLeftNum: 14,
		UpdateLast: true, NotifyServiceExpire: true,
		Extra: storage.JSONObject{"workshop": "North yard"},
	}
}

// exampleDueService is the due record of the example of GET /services/due.
func exampleDueService() DueService {
	return DueService{storage.DueService{Service: exampleService(), ObjectName: "Truck 7",
		OdoRemaining: ptr(int64(-120)), DaysRemaining: ptr(int64(30)),
		Due: storage.StringList{storage.DueOdo}, State: storage.DueExpired}}
}
