package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// TestAppendJSONMatchesEncoder: the hand-written list envelopes are byte
// for byte what json.Encoder (without HTML escaping) writes.
func TestAppendJSONMatchesEncoder(t *testing.T) {
	svc := benchServices(12)
	svc[3].Name = `Brake <front> & "rear"`
	svc[4].Extra = storage.JSONObject{"note": "a<b", "name": "ignored", "nested": map[string]any{"k": []any{1.0, "x"}}}
	remaining := int64(-5)
	due := []storage.DueService{{Service: svc[3], ObjectName: "Truck <7>", OdoRemaining: &remaining, Due: storage.StringList{"odo"}, State: "expired"},
		{Service: svc[4]}}
	meta := Meta{RequestID: "req-1", Paging: &Paging{Page: 2, PerPage: 12, Total: 30, Pages: 3}}
	for name, env := range map[string]interface {
		appendJSON([]byte) ([]byte, bool, error)
	}{
		"services":     &Envelope[[]Service]{Success: true, Data: services(svc), Meta: meta},
		"no_services":  &Envelope[[]Service]{Success: true, Data: []Service{}, Meta: Meta{RequestID: "r"}},
		"nil_services": &Envelope[[]Service]{Success: true, Meta: Meta{RequestID: "r"}},
		"due":          &Envelope[[]DueService]{Success: true, Data: dueServices(due), Meta: Meta{RequestID: "r"}},
		"account":      &Envelope[Account]{Success: true, Data: exampleAccount(), Meta: Meta{RequestID: "r"}},
		"account_odd": &Envelope[Account]{Success: true, Data: Account{ID: -1, Username: "a\"<b>&\u2028\x01\xff", Type: "user",
			Permissions: Permissions{Privileges: []string{}, Token: []string{"<&>", "\\"}, Routes: map[string]bool{"z": false, "\"q": true, "A": true, "é": false}}}, Meta: Meta{RequestID: "r"}},
		"account_nil": &Envelope[Account]{Meta: Meta{RequestID: "r"}},
	} {
		t.Run(name, func(t *testing.T) { matchesEncoder(t, name, env) })
	}
	if _, ok, _ := (&Envelope[storage.Report]{}).appendJSON(nil); ok {
		t.Fatal("a report envelope took the hand-written path")
	}
}

// TestAppendEventMatchesEncoder: the hand-written event envelope (GET
// /events/{id}) is byte for byte what json.Encoder writes, for every
// string the encoder treats specially: each byte from 0 to 255 alone,
// invalid UTF-8, U+2028 and U+2029, HTML characters (escaped inside the
// lists and day_time, which go through json.Marshal, kept elsewhere),
// multi-byte runes, nil and empty lists and objects, a nested day_time,
// negative and large numbers, and meta with and without paging.
func TestAppendEventMatchesEncoder(t *testing.T) {
	var strs []string
	for c := 0; c < 256; c++ {
		strs = append(strs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	strs = append(strs, "", "\u2028", "x\u2029y", "\xff\xfe", "\xe2\x80", "é中😀", `<a href="x">&amp;</a>`, `back\slash`, "\ufffd")
	base := exampleEvent()
	events := []storage.Event{base, {}, {WeekDays: storage.StringList{}, DayTime: storage.JSONObject{}, IMEI: storage.StringList{}}}
	for i, s := range strs {
		ev := base
		ev.EventID, ev.EmailTemplateID, ev.SMSTemplateID = int64(i)-3, -1<<63, 1<<63-1
		ev.Type, ev.Name, ev.CheckedValue, ev.RouteTrigger, ev.ZoneTrigger = s, s+s, s, s, s
		ev.NotifyEmailAddress, ev.NotifySMSNumber, ev.CmdGateway, ev.CmdType, ev.CmdString = s, s, s, s, s
		ev.WeekDays, ev.IMEI, ev.Routes, ev.Zones = storage.StringList{s}, storage.StringList{s, s}, nil, storage.StringList{}
		ev.DayTime = storage.JSONObject{"from": s, s: []any{1.5, s, map[string]any{"k": s}}}
		ev.Active, ev.NotifySMS, ev.CmdSend = i%2 == 0, i%3 == 0, true
		events = append(events, ev)
	}
	metas := []Meta{{}, {RequestID: "req-1"}, {RequestID: "<&>\u2028", Paging: &Paging{Page: 2, PerPage: 12, Total: 30, Pages: 3}}}
	var page []Event
	for i, ev := range events {
		w := Event{Event: ev, Evaluable: i%2 == 0}
		if !w.Evaluable {
			w.Reason = strs[i%len(strs)]
		}
		page = append(page, w)
		for _, success := range []bool{true, false} {
			matchesEncoder(t, fmt.Sprintf("event %d", i), &Envelope[Event]{Success: success, Data: w, Meta: metas[i%len(metas)]})
		}
	}
	// The list of GET /events takes the hand-written path too.
	matchesEncoder(t, "events", &Envelope[[]Event]{Success: true, Data: page, Meta: metas[2]})
	matchesEncoder(t, "no_events", &Envelope[[]Event]{Success: true, Data: []Event{}, Meta: metas[1]})
	matchesEncoder(t, "nil_events", &Envelope[[]Event]{Success: true, Meta: metas[1]})
	matchesEncoder(t, "wired", &Envelope[[]Event]{Success: true, Data: []Event{wireEvent(base)}, Meta: metas[1]})
}

// TestAppendServicesMatchEncoder: the hand-written service and due pages
// are byte for byte what json.Encoder writes through the records'
// MarshalJSON (json.Marshal of the named fields, HTML characters escaped,
// then the extra properties), for every string the encoder treats
// specially in each string field, a missing and a present days_last, nil,
// negative and extreme remaining values, nil, empty and full due lists,
// and extra properties that are empty, nested, HTML-laden or named like a
// field (never overriding it).
func TestAppendServicesMatchEncoder(t *testing.T) {
	var strs []string
	for c := 0; c < 256; c++ {
		strs = append(strs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	strs = append(strs, "", "\u2028", "x\u2029y", "\xff\xfe", "\xe2\x80", "é中😀", `<a href="x">&amp;</a>`, `back\slash`, "\ufffd")
	day := storage.NewDate(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	first := storage.NewDate(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
	last := storage.NewDate(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
	low, high, neg := int64(-1<<63), int64(1<<63-1), int64(-5)
	extras := []storage.JSONObject{nil, {}, {"workshop": "Main <depot> & co"},
		{"name": "ignored", "imei": 1.0, "state": "ignored", "z": map[string]any{"k": []any{1.5, "\u2028", nil, true}}}}
	var svc []storage.Service
	var due []storage.DueService
	for i, s := range strs {
		r := storage.Service{
			ServiceID: int64(i) - 3, IMEI: s, Name: s + s,
			Odo: i%2 == 0, OdoInterval: i * 1000, OdoLast: -i, Engh: i%3 == 0, EnghInterval: 1<<31 - 1, EnghLast: -1 << 31,
			Days: i%5 == 0, DaysInterval: i, OdoLeft: true, OdoLeftNum: i, EnghLeft: i%7 == 0, EnghLeftNum: 3,
			DaysLeft: i%2 == 1, DaysLeftNum: 30, UpdateLast: i%4 == 0, NotifyServiceExpire: i%3 == 1,
			Extra: extras[i%len(extras)],
		}
		switch i % 6 {
		case 0, 2:
			r.DaysLast = &day
		case 4:
			r.DaysLast = &first
		case 5:
			r.DaysLast = &last
		}
		svc = append(svc, r)
		d := storage.DueService{Service: r, ObjectName: s, State: s}
		switch i % 4 {
		case 0:
			d.OdoRemaining, d.Due = &neg, storage.StringList{"odo"}
		case 1:
			d.OdoRemaining, d.EnghRemaining, d.DaysRemaining, d.Due = &low, &high, &neg, storage.StringList{"odo", "engh", "days", s}
		case 2:
			d.Due = storage.StringList{}
		}
		due = append(due, d)
	}
	for name, env := range map[string]interface {
		appendJSON([]byte) ([]byte, bool, error)
	}{
		"services": &Envelope[[]Service]{Success: true, Data: services(svc), Meta: Meta{RequestID: "r", Paging: &Paging{Page: 1, PerPage: 500, Total: int64(len(svc)), Pages: 1}}},
		"due":      &Envelope[[]DueService]{Success: true, Data: dueServices(due), Meta: Meta{RequestID: "<&>"}},
	} {
		matchesEncoder(t, name, env)
	}
}

// matchesEncoder fails unless env's hand-written bytes are exactly what
// json.Encoder (without HTML escaping, as sendJSON) writes for it,
// showing where they first differ.
func matchesEncoder(t *testing.T, name string, env interface {
	appendJSON([]byte) ([]byte, bool, error)
}) {
	t.Helper()
	got, ok, err := env.appendJSON(nil)
	if err != nil || !ok {
		t.Fatalf("%s: appendJSON: %v, %v", name, ok, err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		t.Fatal(err)
	}
	if w := want.Bytes(); !bytes.Equal(got, w) {
		i := 0
		for i < len(got) && i < len(w) && got[i] == w[i] {
			i++
		}
		t.Fatalf("%s: first difference at byte %d:\ngot  %.200q\nwant %.200q", name, i, got[max(0, i-80):], w[max(0, i-80):])
	}
}
