package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// The examples of the OpenAPI document are Go values of the wire types,
// encoded as the handlers encode them, so that they cannot drift from the
// schemas (the document's validation checks each example against its
// schema).

const exampleRequestID = "5f0c3a8e9b1d4c7fa2e6b8d0c4f1a3e7"

func exampleMeta() Meta { return Meta{RequestID: exampleRequestID} }

func exampleListMeta(total int64) Meta {
	return Meta{RequestID: exampleRequestID, Paging: &Paging{Page: 1, PerPage: defaultPerPage, Total: total, Pages: (total + defaultPerPage - 1) / defaultPerPage}}
}

func ptr[T any](v T) *T { return &v }

func exampleDate(s string) *storage.Date {
	d, err := storage.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return &d
}

func exampleService() storage.Service {
	return storage.Service{
		ServiceID: 12, IMEI: "356938035643809", Name: "Oil change",
		Odo: true, OdoInterval: 10000, OdoLast: 110000,
		Engh: false, EnghInterval: 0, EnghLast: 0,
		Days: true, DaysInterval: 365, DaysLast: exampleDate("2025-03-01"),
		OdoLeft: true, OdoLeftNum: 500, DaysLeft: true, DaysLeftNum: 14,
		UpdateLast: true, NotifyServiceExpire: true,
	}
}

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

// operationExamples holds the success example of each operation.
func operationExamples() map[string]any {
	svc := exampleService()
	svc.Extra = storage.JSONObject{"workshop": "North yard"}
	dueSvc := exampleService()
	dueSvc.Extra = storage.JSONObject{"workshop": "North yard"}
	due := storage.DueService{Service: dueSvc, ObjectName: "Truck 7",
		OdoRemaining: ptr(int64(-120)), DaysRemaining: ptr(int64(30)),
		Due: storage.StringList{storage.DueOdo}, State: storage.DueExpired}
	rep := storage.Report{
		ReportID: 2, Name: "Daily stops", Type: "drives_stops", Format: "pdf",
		ShowAddresses: true, StopDuration: 5, SpeedLimit: 90,
		IMEI: storage.StringList{"356938035643809"}, ZoneIDs: storage.StringList{}, SensorNames: storage.StringList{},
		DataItems: storage.StringList{"route_start", "route_end"}, SchedulePeriod: "d",
		ScheduleEmailAddress: "ops@acme.example", DtScheduleD: ptr(time.Date(2026, 1, 2, 6, 0, 0, 0, time.UTC)),
	}
	pass := storage.Passenger{PassengerID: 31, PassengerName: "Ana Silva", PassengerAssignID: "CARD-0042",
		PassengerPhone: "+351 210 000 000", PassengerEmail: "ana.silva@acme.example", PassengerActive: true,
		PassengerPickupPointID: ptr(int64(3))}
	acct := Account{ID: 4, Username: "acme", Email: "ops@acme.example", ManagerID: 3, Type: "user",
		Active: "true", AccountExpire: "false", Permissions: Permissions{
			ReadOnly: false, Privileges: []string{"event_notifications", "reports"}, Token: []string{"*"},
			Routes: map[string]bool{"GET /me": true, "GET /services": true, "GET /services/due": true,
				"POST /passengers": true, "GET /reports": true, "GET /events": true, "GET /events/{id}": true,
				"GET /objects": true},
		}}
	return map[string]any{
		"get_me":           Envelope[Account]{Success: true, Data: acct, Meta: exampleMeta()},
		"get_services":     Envelope[[]Service]{Success: true, Data: []Service{{svc}}, Meta: exampleListMeta(1)},
		"get_services_due": Envelope[[]DueService]{Success: true, Data: []DueService{{due}}, Meta: exampleMeta()},
		"create_passenger": Envelope[storage.Passenger]{Success: true, Data: pass, Meta: exampleMeta()},
		"get_reports":      Envelope[[]storage.Report]{Success: true, Data: []storage.Report{rep}, Meta: exampleListMeta(1)},
		"get_events":       Envelope[[]storage.Event]{Success: true, Data: []storage.Event{exampleEvent()}, Meta: exampleListMeta(1)},
		"get_event":        Envelope[storage.Event]{Success: true, Data: exampleEvent(), Meta: exampleMeta()},
		"get_objects": Envelope[[]storage.Object]{Success: true, Data: []storage.Object{{ID: 5, IMEI: "356938035643809", AccountID: 4,
			Name: "Truck 7", Odometer: 120345, EngineHours: 3400}}, Meta: exampleListMeta(1)},
	}
}

// examplePassengerInput is the request example of create_passenger.
func examplePassengerInput() PassengerInput {
	return PassengerInput{PassengerName: ptr("Ana Silva"), PassengerAssignID: ptr("card-0042"),
		PassengerPhone: ptr("+351 210 000 000"), PassengerEmail: ptr("ana.silva@acme.example"),
		PassengerPickupPointID: ptr(int64(3))}
}

// errorExample is the example error of each documented error status.
func errorExample(status int) ErrorEnvelope {
	var e *Error
	switch status {
	case http.StatusBadRequest:
		e = invalidParam(paramPerPage, "must be between 1 and 500")
	case http.StatusUnauthorized:
		e = newError(CodeInvalidToken, "the token is malformed, unknown or revoked", nil)
	case http.StatusForbidden:
		e = newError(CodeTokenPermissionDenied, "the token does not grant GET /reports",
			map[string]any{"method": "GET", "route": "/reports"})
	case http.StatusNotFound:
		e = newError(CodeNotFound, "not found", nil)
	case http.StatusConflict:
		e = newError(CodeConflict, "a passenger with this passenger_assign_id already exists in the account",
			map[string]any{"field": "passenger_assign_id"})
	case http.StatusRequestEntityTooLarge:
		e = newError(CodePayloadTooLarge, "the request body is larger than 64 KiB", map[string]any{"limit_bytes": MaxBodyBytes})
	case http.StatusUnsupportedMediaType:
		e = newError(CodeUnsupportedMediaType, "the request body must be application/json", map[string]any{"content_type": "text/plain"})
	case http.StatusTooManyRequests:
		e = newError(CodeRateLimited, "too many requests", nil)
	case http.StatusServiceUnavailable:
		e = newError(CodeUnavailable, "the service is temporarily unavailable", nil)
	default:
		e = newError(CodeInternal, "internal error", nil)
	}
	return ErrorEnvelope{Success: false, Error: e, Meta: exampleMeta()}
}

// jsonValue returns v as its generic JSON value (what a client decodes).
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}
