package api

import (
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// registerServiceWrites declares POST /services, PATCH and DELETE
// /services/{id} and POST /services/{id}/done (docs/design.md §15).
func (s *Server) registerServiceWrites(g *fuego.Server) {
	who := " Subaccounts write no service records. Needs the token permission "
	fuego.Post(g, "/services", func(c fuego.ContextWithBody[ServiceInput]) (*Envelope[Service], error) {
		row, replayed, err := serviceResource.create(s, c.Request(), c.Context(), s.cfg.Store.CreateService)
		if err != nil {
			return nil, err
		}
		return createdEnvelope(c, Service{row}, replayed), nil
	}, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_service"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Create a maintenance service record"),
		fuego.OptionDescription("Creates a service record of a device of account_id (default: the caller's own account), an account in the " +
			"caller's management scope (404 outside) that is not a subaccount; the device must be that account's (400 VALIDATION_FAILED " +
			"otherwise, the same answer for an unknown IMEI and another tenant's). A name is unique per device (409). A record created due " +
			"soon or expired with notify_service_expire notifies at once. Audited (service.create)." + who + "POST /services and write access."),
		idempotentCreate(idempotencyKeyHeader),
		takesBody(serviceInputSchema(true), exampleServiceInput()),
		respondsOne(serviceSchema(), Service{exampleService()}),
	})...)
	fuego.Patch(g, "/services/{id}", func(c fuego.ContextWithBody[ServiceFields]) (*Envelope[Service], error) {
		row, err := serviceResource.change(s, c, c.Context(), s.cfg.Store.UpdateService)
		if err != nil {
			return nil, err
		}
		return &Envelope[Service]{Data: Service{row}}, nil
	}, routeOptions(changeErrors(), errorResponses(http.StatusConflict), []fuego.RouteOption{
		fuego.OptionOperationID("update_service"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Change a maintenance service record"),
		fuego.OptionDescription("Changes the fields named in the body of a service record in the caller's scope (404 outside, like a missing " +
			"id); the record is then validated whole, as a create's body. Its due state moves with it: a record moved out of soon or expired " +
			"notifies again when it next enters one. Audited (service.update)." + who + "PATCH /services/{id} and write access."),
		takesBody(serviceInputSchema(false), ServiceFields{OdoInterval: 15000}),
		respondsOne(serviceSchema(), Service{exampleService()}),
	}, pathID("id", "Service record id.", exampleService().ServiceID))...)
	fuego.Delete(g, "/services/{id}", func(c fuego.ContextNoBody) (any, error) {
		return serviceResource.remove(s, c, s.cfg.Store.DeleteService)
	}, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("delete_service"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Delete a maintenance service record"),
		fuego.OptionDescription("Deletes a service record in the caller's scope (404 outside, like a missing id). Audited (service.delete)." +
			who + "DELETE /services/{id} and write access."),
		fuego.OptionDefaultStatusCode(http.StatusNoContent), respondsNoContent(),
	}, pathID("id", "Service record id.", exampleService().ServiceID))...)
	fuego.Post(g, "/services/{id}/done", s.postServiceDone, routeOptions(changeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("service_done"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Record that a service was done"),
		fuego.OptionDescription("The work of a service record in the caller's scope (404 outside) was done: odo_last and engh_last take the " +
			"body's odometer and engine_hours, else the device's current values (moved by its readings); days_last takes the UTC day of " +
			"time (default now; at most 5 minutes ahead). The record's due state moves with it. Audited (service.done)." +
			who + "POST /services/{id}/done and write access."),
		takesBody(serviceDoneSchema(), ServiceDoneInput{Odometer: ptr(int64(120345))}),
		respondsOne(serviceSchema(), Service{exampleService()}),
	}, pathID("id", "Service record id.", exampleService().ServiceID))...)
}

// ServiceFields are the fields of a service record a client writes: the
// body of PATCH /services/{id} (the fields present replace the record's)
// and, with account_id, of POST /services (absent fields take their
// defaults).
type ServiceFields struct {
	IMEI                string  `json:"imei,omitempty"`
	Name                string  `json:"name,omitempty"`
	Odo                 bool    `json:"odo,omitempty"`
	OdoInterval         int64   `json:"odo_interval,omitempty"`
	OdoLast             int64   `json:"odo_last,omitempty"`
	Engh                bool    `json:"engh,omitempty"`
	EnghInterval        int64   `json:"engh_interval,omitempty"`
	EnghLast            int64   `json:"engh_last,omitempty"`
	Days                bool    `json:"days,omitempty"`
	DaysInterval        int64   `json:"days_interval,omitempty"`
	DaysLast            *string `json:"days_last,omitempty"`
	OdoLeft             bool    `json:"odo_left,omitempty"`
	OdoLeftNum          int64   `json:"odo_left_num,omitempty"`
	EnghLeft            bool    `json:"engh_left,omitempty"`
	EnghLeftNum         int64   `json:"engh_left_num,omitempty"`
	DaysLeft            bool    `json:"days_left,omitempty"`
	DaysLeftNum         int64   `json:"days_left_num,omitempty"`
	UpdateLast          bool    `json:"update_last,omitempty"`
	NotifyServiceExpire bool    `json:"notify_service_expire,omitempty"`
}

// ServiceInput is the body of POST /services.
type ServiceInput struct {
	// AccountID is the record's account; absent: the caller's own.
	AccountID *int64 `json:"account_id,omitempty"`
	ServiceFields
}

// serviceResource declares the writes of service records.
var serviceResource = configResource[storage.Service, ServiceInput, ServiceFields]{
	what: "service record", route: "POST /services", resource: storage.Services.Resource(),
	validate: func(in ServiceInput, faults textFaults) (configRequest[storage.Service], error) {
		v := fieldCheck{}
		v.account(in.AccountID)
		row := serviceOf(v, in.ServiceFields)
		return configRequest[storage.Service]{Row: row, Account: in.AccountID}, v.done("service record", faults)
	},
	patch: func(in ServiceFields, faults textFaults) (storage.Service, error) {
		v := fieldCheck{}
		row := serviceOf(v, in)
		return row, v.done("service record", faults)
	},
	owner:    func(r *storage.Service, account int64) { r.AccountID = account },
	conflict: "a service record with this name already exists for the device",
}

// serviceOf validates a service record's fields into v and returns the row.
func serviceOf(v fieldCheck, in ServiceFields) storage.Service {
	r := storage.Service{
		IMEI: in.IMEI, Name: v.name("name", in.Name),
		Odo: in.Odo, OdoInterval: v.count("odo_interval", in.OdoInterval), OdoLast: v.count("odo_last", in.OdoLast),
		Engh: in.Engh, EnghInterval: v.count("engh_interval", in.EnghInterval), EnghLast: v.count("engh_last", in.EnghLast),
		Days: in.Days, DaysInterval: v.count("days_interval", in.DaysInterval),
		OdoLeft: in.OdoLeft, OdoLeftNum: v.count("odo_left_num", in.OdoLeftNum),
		EnghLeft: in.EnghLeft, EnghLeftNum: v.count("engh_left_num", in.EnghLeftNum),
		DaysLeft: in.DaysLeft, DaysLeftNum: v.count("days_left_num", in.DaysLeftNum),
		UpdateLast: in.UpdateLast, NotifyServiceExpire: in.NotifyServiceExpire,
	}
	if !imeiPattern.MatchString(r.IMEI) {
		v["imei"] = "required: the IMEI of a device of the account (1 to 50 letters, digits or '-')"
	}
	if in.DaysLast != nil {
		d, err := storage.ParseDate(*in.DaysLast)
		if err != nil {
			v["days_last"] = "a date YYYY-MM-DD from 0001-01-01 to 9999-12-31, or null"
		} else {
			r.DaysLast = &d
		}
	}
	return r
}

// serviceInputSchema is the ServiceInput component (create), or
// ServicePatch (change).
func serviceInputSchema(create bool) wireType {
	fields := serviceFields()
	delete(fields, "service_id")
	for _, f := range []string{"odo_interval", "odo_last", "engh_interval", "engh_last", "days_interval", "odo_left_num", "engh_left_num", "days_left_num"} {
		fields[f] = append(fields[f], minimum(0), maximum(maxInteger))
	}
	fields["imei"] = []fieldOpt{pattern(imeiPattern.String()), minLen(1), maxLen(50), desc("IMEI of a device of the record's account; required on a create.")}
	fields["name"] = []fieldOpt{minLen(1), maxLen(maxNameLen), desc("Name of the service, unique per device (409 otherwise); required on a create.")}
	if !create {
		return wireType{name: "ServicePatch", required: []string{}, minProperties: 1, value: ServiceFields{}, fields: fields,
			description: "The fields of a service record to change (docs/design.md §15); at least one. Field names are exact; unknown, repeated and null keys are rejected (days_last takes null)."}
	}
	fields["account_id"] = []fieldOpt{minimum(1), desc("The record's account, in the caller's management scope and not a subaccount; defaults to the caller's own.")}
	return wireType{name: "ServiceInput", value: ServiceInput{}, fields: fields, required: []string{"imei", "name"},
		description: "A maintenance service record to create (docs/design.md §15). Absent fields take their defaults (false, 0, null). Field names are exact; unknown, repeated and null keys are rejected (days_last takes null)."}
}

func exampleServiceInput() ServiceInput {
	e := exampleService()
	last := e.DaysLast.String()
	return ServiceInput{ServiceFields: ServiceFields{IMEI: e.IMEI, Name: e.Name, Odo: true, OdoInterval: 10000, OdoLast: 110000,
		Days: true, DaysInterval: 365, DaysLast: &last, OdoLeft: true, OdoLeftNum: 500, DaysLeft: true, DaysLeftNum: 14,
		UpdateLast: true, NotifyServiceExpire: true}}
}

// ServiceDoneInput is the body of POST /services/{id}/done: each field
// absent or null takes its default.
type ServiceDoneInput struct {
	// Time is when the work was done (RFC 3339); default now.
	Time *string `json:"time,omitempty"`
	// Odometer is the odometer then (km); default the device's current.
	Odometer *int64 `json:"odometer,omitempty"`
	// EngineHours are the engine hours then (h); default the device's current.
	EngineHours *int64 `json:"engine_hours,omitempty"`
}

// maxDoneAhead is how far ahead of the server's clock a service's done
// time may be (as a reading's, docs/design.md §14).
const maxDoneAhead = 5 * time.Minute

// postServiceDone answers POST /services/{id}/done: 200 with the record.
func (s *Server) postServiceDone(c fuego.ContextWithBody[ServiceDoneInput]) (*Envelope[Service], error) {
	id, err := idParam(c)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	type done struct {
		day                   storage.Date
		odometer, engineHours *int64
	}
	d, err := validBody(c.Request(), func(in ServiceDoneInput, faults textFaults) (done, error) {
		v := fieldCheck{}
		at := now
		if in.Time != nil {
			t, err := time.Parse(time.RFC3339Nano, *in.Time)
			switch {
			case err != nil:
				v["time"] = "an RFC 3339 time, or null for now"
			case t.After(now.Add(maxDoneAhead)):
				v["time"] = "at most 5 minutes ahead of the server's clock"
			case t.Year() < 1:
				v["time"] = "from year 1"
			default:
				at = t
			}
		}
		for field, p := range map[string]*int64{"odometer": in.Odometer, "engine_hours": in.EngineHours} {
			if p != nil {
				v.count(field, *p)
			}
		}
		return done{day: storage.NewDate(at.UTC()), odometer: in.Odometer, engineHours: in.EngineHours}, v.done("service record", faults)
	})
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	m, err := s.managerFrom(ctx)
	if err != nil {
		return nil, err
	}
	scope, err := s.scopeFor(ctx, storage.Services.Resource())
	if err != nil {
		return nil, err
	}
	row, err := s.cfg.Store.ServiceDone(ctx, scope, m.scope, actor(ctx, m), id, d.day, d.odometer, d.engineHours)
	if err != nil {
		return nil, serviceResource.writeError(err)
	}
	return &Envelope[Service]{Data: Service{row}}, nil
}

// serviceDoneSchema is the ServiceDone component.
func serviceDoneSchema() wireType {
	return wireType{name: "ServiceDone", value: ServiceDoneInput{},
		description: "What was done (docs/design.md §15): each field absent or null takes its default. Field names are exact; unknown and repeated keys are rejected.",
		fields: map[string][]fieldOpt{
			"time":         {typed(openapi3.TypeString), nullable(), format("date-time"), desc("When the work was done (RFC 3339; at most 5 minutes ahead); absent or null: now. days_last takes its UTC day.")},
			"odometer":     {minimum(0), maximum(maxInteger), desc("Odometer then (km); default the device's current odometer.")},
			"engine_hours": {minimum(0), maximum(maxInteger), desc("Engine hours then (h); default the device's current engine hours.")},
		}}
}
