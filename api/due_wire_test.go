package api_test

import (
	"encoding/json"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage"
)

// TestDueServiceJSON: the wire form of a due record is every field of the
// service record's wire form plus the due fields, due as [] when empty.
func TestDueServiceJSON(t *testing.T) {
	t.Parallel()
	svc, err := json.Marshal(storage.Service{ServiceID: 4})
	if err != nil {
		t.Fatal(err)
	}
	remaining := int64(-3)
	due, err := json.Marshal(api.DueService{DueService: storage.DueService{Service: storage.Service{ServiceID: 4}, ObjectName: "Van", EnghRemaining: &remaining, State: "expired"}})
	if err != nil {
		t.Fatal(err)
	}
	var svcFields, dueFields map[string]any
	if err := json.Unmarshal(svc, &svcFields); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(due, &dueFields); err != nil {
		t.Fatal(err)
	}
	for k, v := range svcFields {
		if got, ok := dueFields[k]; !ok || got != v {
			t.Errorf("due record %s: %v, want %v", k, got, v)
		}
	}
	want := map[string]any{"object_name": "Van", "odo_remaining": nil, "engh_remaining": -3.0, "days_remaining": nil, "due": []any{}, "state": "expired"}
	for k, v := range want {
		got, ok := dueFields[k]
		if b1, b2 := mustMarshal(t, got), mustMarshal(t, v); !ok || string(b1) != string(b2) {
			t.Errorf("%s: got %s, want %s", k, b1, b2)
		}
	}
	if len(dueFields) != len(svcFields)+len(want) {
		t.Errorf("due record has %d fields, want %d: %s", len(dueFields), len(svcFields)+len(want), due)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
