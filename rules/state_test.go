package rules

import (
	"encoding/json"
	"reflect"
	"testing"
)

// stateJSON encodes a state as storage stores it.
func stateJSON(t testing.TB, st State) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decodeState decodes a stored state.
func decodeState(t testing.TB, s string) State {
	t.Helper()
	var st State
	if err := json.Unmarshal([]byte(s), &st); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return st
}

// TestStateJSON: the zero state is "{}", an empty or older stored state
// decodes to one that evaluates safely, and a state evaluates the same
// after a round trip through JSON as before it.
func TestStateJSON(t *testing.T) {
	if s := stateJSON(t, State{}); s != "{}" {
		t.Errorf("zero state %s", s)
	}
	rs := []Rule{
		{ID: 1, Type: Overspeed, CheckedValue: "90"},
		{ID: 2, Type: IgnitionOn},
		{ID: 3, Type: FuelDrop, CheckedValue: "10"},
		{ID: 4, Type: Stopped, CheckedValue: "5"},
		{ID: 5, Type: ConnectionNo, CheckedValue: "30"},
		{ID: 6, Type: Param, CheckedValue: "t > 1"},
	}
	for _, stored := range []string{
		`{}`,
		`{"rules":{}}`,
		`{"rules":null,"prev":null}`,
		`{"rules":{"1":{}}}`,
		`{"rules":{"1":{"fired":true},"99":{"fired":true},"x":{}}}`,
		`{"prev":{"time":"2026-03-02T11:00:00Z"}}`,
		`{"prev":{"time":"2026-03-02T11:00:00Z","ignition":false,"attributes":{"fuel":"50"}}}`,
		`{"prev":{"time":"2026-03-02T11:00:00Z","attributes":{"fuel":{"nested":1}}}}`,
		`{"rules":{"4":{"since":"2026-03-02T11:00:00+01:00"}},"unknown":1}`,
	} {
		st := decodeState(t, stored)
		next, _ := Evaluate(rs, nil, st, Reading{Time: at(0), Speed: num(0), Ignition: flag(true), Attributes: attrs{"fuel": 30.0}})
		if next.Prev == nil || !next.Prev.Time.Equal(at(0)) {
			t.Errorf("%s: prev %+v", stored, next.Prev)
		}
		next, _ = Silence(rs, nil, next, at(0), at(60))
		s := stateJSON(t, next)
		if again := stateJSON(t, decodeState(t, s)); again != s {
			t.Errorf("%s: round trip %s → %s", stored, s, again)
		}
	}

	// The same sequence, once in memory and once through JSON after each
	// reading, fires the same and ends in the same state.
	seq := []Reading{
		{Time: at(0), Speed: num(95), Ignition: flag(false), Attributes: attrs{"fuel": 50.0, "t": 2.0}},
		{Time: at(1), Speed: num(0), Ignition: flag(true), Attributes: attrs{"fuel": 35.0}},
		{Time: at(3), Speed: num(0)},
		{Time: at(9), Speed: num(0), Attributes: attrs{"t": 0.0}},
		{Time: at(10), Speed: num(100), Ignition: flag(false), Attributes: attrs{"t": 5.0}},
	}
	var mem, wire State
	for i, r := range seq {
		var f1, f2 []Fired
		mem, f1 = Evaluate(rs, nil, mem, r)
		wire, f2 = Evaluate(rs, nil, wire, r)
		if !reflect.DeepEqual(f1, f2) {
			t.Fatalf("reading %d: %+v\nthrough JSON %+v", i, f1, f2)
		}
		s := stateJSON(t, wire)
		wire = decodeState(t, s)
	}
	a := stateJSON(t, mem)
	b := stateJSON(t, wire)
	if a != b {
		t.Errorf("in memory %s\nthrough JSON %s", a, b)
	}
	// Compact: the rules that remember nothing are not stored.
	want := `{"rules":{"1":{"fired":true},"3":{"fired":true},"6":{"fired":true}},"prev":{"time":"2026-03-02T12:10:00Z","ignition":false,"attributes":{"fuel":35}}}`
	if a != want {
		t.Errorf("state %s\n want %s", a, want)
	}
}
