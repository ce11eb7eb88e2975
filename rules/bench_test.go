package rules

import (
	"encoding/json"
	"testing"
	"time"
)

// benchRules are ten rules of the kinds a generated account holds (10 per
// user in the large preset), windows included.
var benchRules = []Rule{
	{ID: 1, Name: "Highway", Type: Overspeed, CheckedValue: "90"},
	{ID: 2, Name: "Town", Type: Overspeed, CheckedValue: "50", DayTime: DayTime{From: "22:00", To: "06:00"}},
	{ID: 3, Name: "Start", Type: IgnitionOn, WeekDays: []string{"sat", "sun"}},
	{ID: 4, Name: "Stop", Type: IgnitionOff},
	{ID: 5, Name: "Help", Type: SOS},
	{ID: 6, Name: "Door", Type: DoorOpen, DayTime: DayTime{From: "08:00", To: "18:00"}},
	{ID: 7, Name: "Hot", Type: Param, CheckedValue: "temp1 > 30"},
	{ID: 8, Name: "Theft", Type: FuelDrop, CheckedValue: "20"},
	{ID: 9, Name: "Parked", Type: Stopped, CheckedValue: "15"},
	{ID: 10, Name: "Lost", Type: ConnectionNo, CheckedValue: "60"},
}

// benchReading is a typical reading: every field the rules read.
func benchReading(tm time.Time) Reading {
	return Reading{Time: tm, Lat: num(52.5), Lon: num(13.4), Speed: num(42), Odometer: num(12345), Ignition: flag(true),
		Attributes: attrs{"sos": false, "door": 0.0, "temp1": 21.5, "fuel": 55.0}}
}

// BenchmarkEvaluate is the evaluation's cost per reading: ten rules, one
// reading, on the state the previous reading left.
func BenchmarkEvaluate(b *testing.B) {
	loc := zone(b, "Europe/Berlin")
	st, _ := Evaluate(benchRules, loc, State{}, benchReading(t0))
	r := benchReading(t0.Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		Evaluate(benchRules, loc, st, r)
	}
}

// BenchmarkEvaluateJSON is BenchmarkEvaluate with the state decoded from
// and encoded to JSON, as storage reads and writes objects.rule_state.
func BenchmarkEvaluateJSON(b *testing.B) {
	loc := zone(b, "Europe/Berlin")
	st, _ := Evaluate(benchRules, loc, State{}, benchReading(t0))
	stored, err := json.Marshal(st)
	if err != nil {
		b.Fatal(err)
	}
	r := benchReading(t0.Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		var s State
		if err := json.Unmarshal(stored, &s); err != nil {
			b.Fatal(err)
		}
		next, _ := Evaluate(benchRules, loc, s, r)
		if _, err := json.Marshal(next); err != nil {
			b.Fatal(err)
		}
	}
}
