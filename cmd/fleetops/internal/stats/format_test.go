package stats

import (
	"strconv"
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Millis(0, 1), "0.0"},
		{Millis(12345*time.Microsecond, 1), "12.3"},
		{Millis(12345*time.Microsecond, 2), "12.35"},
		{Millis(1500*time.Microsecond, 0), "2"},
		{Millis(2*time.Second, 2), "2000.00"},
		{Seconds(0), "0.0"},
		{Seconds(1540 * time.Millisecond), "1.5"},
		{Seconds(90 * time.Second), "90.0"},
		{Micros(0), "-"},
		{Micros(-time.Second), "-"},
		{Micros(1500 * time.Nanosecond), "2"},
		{Micros(3 * time.Millisecond), "3000"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestRate(t *testing.T) {
	for _, tc := range []struct {
		n       int64
		elapsed time.Duration
		want    float64
	}{
		{0, time.Second, 0},
		{100, 2 * time.Second, 50},
		{100, 0, 0},
		{100, -time.Second, 0},
		{3, 1500 * time.Millisecond, 2},
	} {
		if got := Rate(tc.n, tc.elapsed); got != tc.want {
			t.Errorf("Rate(%d, %s) = %v, want %v", tc.n, tc.elapsed, got, tc.want)
		}
	}
	if got := (Summary{Requests: 30, Elapsed: 3 * time.Second}).Throughput(); got != 10 {
		t.Errorf("Throughput = %v, want 10", got)
	}
	if got := (Summary{Requests: 30}).Throughput(); got != 0 {
		t.Errorf("Throughput without elapsed time = %v, want 0", got)
	}
}

func TestCounts(t *testing.T) {
	if got := Counts(map[int]int{}, strconv.Itoa); got != "" {
		t.Errorf("empty: %q", got)
	}
	// Ordered by name, not by number or by map order.
	if got, want := Counts(map[int]int{503: 1, 200: 7, 1000: 2, 429: 3}, strconv.Itoa), "1000×2 200×7 429×3 503×1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := Counts(map[string]int{"timeout": 2, "connection refused": 1}, identity), "connection refused×1 timeout×2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Keys that name alike are added up.
	if got, want := Counts(map[int]int{1: 2, -1: 3}, func(int) string { return "x" }), "x×5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
