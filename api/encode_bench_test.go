package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// discardWriter is a ResponseWriter that keeps nothing, so that the
// benchmarks measure encoding only.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// benchServices returns n service records shaped like the generated data
// set: about one in ten has extra properties, two in three a days_last.
func benchServices(n int) []storage.Service {
	out := make([]storage.Service, n)
	day := storage.NewDate(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	for i := range out {
		s := storage.Service{
			ServiceID: int64(1000 + i), IMEI: "356938035643809", Name: "Brake pads front",
			Odo: true, OdoInterval: 40000, OdoLast: 118000 + i, OdoLeft: true, OdoLeftNum: 4000,
			Days: i%3 != 0, DaysInterval: 365, DaysLeft: true, DaysLeftNum: 30, NotifyServiceExpire: i%2 == 0,
			Extra: storage.JSONObject{},
		}
		if s.Days {
			s.DaysLast = &day
		}
		if i%10 == 0 {
			s.Extra = storage.JSONObject{"workshop": "Main depot"}
		}
		out[i] = s
	}
	return out
}

func benchEncode(b *testing.B, ans any) {
	b.Helper()
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/api/v2/services", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.sendJSON(w, r, ans); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeServicePage: the response of GET /services with 50 items
// (the serializer every success response goes through).
func BenchmarkEncodeServicePage(b *testing.B) {
	env := &Envelope[[]Service]{Success: true, Data: services(benchServices(50)),
		Meta: Meta{RequestID: "0123456789abcdef0123456789abcdef", Paging: &Paging{Page: 1, PerPage: 50, Total: 100, Pages: 2}}}
	benchEncode(b, env)
}

// BenchmarkEncodeDuePage: the response of GET /services/due with its
// 500-item maximum.
func BenchmarkEncodeDuePage(b *testing.B) {
	rows := make([]storage.DueService, 500)
	remaining := int64(-120)
	for i, s := range benchServices(500) {
		rows[i] = storage.DueService{Service: s, ObjectName: "Truck 7", OdoRemaining: &remaining, Due: storage.StringList{"odo"}, State: "expired"}
	}
	benchEncode(b, &Envelope[[]DueService]{Success: true, Data: dueServices(rows), Meta: Meta{RequestID: "0123456789abcdef0123456789abcdef"}})
}

// BenchmarkEncodeEvent: the response of GET /events/{id}.
func BenchmarkEncodeEvent(b *testing.B) {
	ev := storage.Event{EventID: 67737, Type: "overspeed", Name: "Overspeed #3", Active: true,
		WeekDays: storage.StringList{"mon", "tue", "wed", "thu", "fri"}, DayTime: storage.JSONObject{"from": "08:00", "to": "18:00"},
		IMEI: storage.StringList{"356938035643809"}, CheckedValue: "90", RouteTrigger: "off", ZoneTrigger: "off",
		NotifySystem: true, NotifyEmail: true, NotifyEmailAddress: "ops@example.com", CmdGateway: "gprs", CmdType: "ascii"}
	benchEncode(b, &Envelope[Event]{Success: true, Data: wireEvent(ev), Meta: Meta{RequestID: "0123456789abcdef0123456789abcdef"}})
}

// BenchmarkParseListRequest: parsing and validating the query string of a
// list request.
func BenchmarkParseListRequest(b *testing.B) {
	r := httptest.NewRequest(http.MethodGet, "/api/v2/services?page=100&per_page=50&search=tachograph&sort=name&order=desc&odo=true", nil)
	l := storage.Services.Descriptor
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseListRequest(r.URL.RawQuery, "/services", l); err != nil {
			b.Fatal(err)
		}
	}
}
