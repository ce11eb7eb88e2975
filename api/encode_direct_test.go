package api

import (
	"bytes"
	"encoding/json"
	"testing"

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
	} {
		t.Run(name, func(t *testing.T) {
			got, ok, err := env.appendJSON(nil)
			if err != nil || !ok {
				t.Fatalf("appendJSON: %v, %v", ok, err)
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(env); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("got  %s\nwant %s", got, want.Bytes())
			}
		})
	}
	if _, ok, _ := (&Envelope[storage.Event]{}).appendJSON(nil); ok {
		t.Fatal("an event envelope took the list path")
	}
}
