package stats

import (
	"slices"
	"testing"
	"time"
)

func durations(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n)
	}
	return out
}

func TestPercentile(t *testing.T) {
	one100 := make([]time.Duration, 100)
	for i := range one100 {
		one100[i] = time.Duration(i + 1)
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"empty p100", []time.Duration{}, 100, 0},
		{"one sample p0", durations(7), 0, 7},
		{"one sample p50", durations(7), 50, 7},
		{"one sample p100", durations(7), 100, 7},
		{"p0 is the minimum", one100, 0, 1},
		{"p1", one100, 1, 1},
		{"p50", one100, 50, 50},
		{"p90", one100, 90, 90},
		{"p99", one100, 99, 99},
		{"p99.9 rounds up to the maximum", one100, 99.9, 100},
		{"p100 is the maximum", one100, 100, 100},
		{"below 0 clamps to the minimum", one100, -5, 1},
		{"above 100 clamps to the maximum", one100, 150, 100},
		// Nearest rank is ⌈n·p/100⌉: a fractional rank goes up, never down.
		{"10 samples p41 (rank 4.1 → 5)", durations(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 41, 5},
		{"10 samples p40 (rank 4 exactly)", durations(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 40, 4},
		{"3 samples p50 (rank 1.5 → 2)", durations(10, 20, 30), 50, 20},
		{"2 samples p50", durations(10, 20), 50, 10},
		{"2 samples p51", durations(10, 20), 51, 20},
		{"ties", durations(5, 5, 5, 9), 75, 5},
		{"unsorted p0", durations(30, 10, 20), 0, 10},
		{"unsorted p50", durations(30, 10, 20), 50, 20},
		{"unsorted p100", durations(30, 10, 20), 100, 30},
		{"reversed p99", durations(100, 90, 80, 70, 60, 50, 40, 30, 20, 10), 99, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.in)
			if got := Percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
			}
			if !slices.Equal(before, tc.in) {
				t.Errorf("the input was changed: %v, was %v", tc.in, before)
			}
		})
	}
}

// TestPercentileWholeRanks checks every whole rank over sizes whose n·p/100
// is a float product (1000 × 99.9, 7 × 100/7...): the rank must not move up
// by float error.
func TestPercentileWholeRanks(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 10, 99, 100, 101, 1000, 1234} {
		d := make([]time.Duration, n)
		for i := range d {
			d[i] = time.Duration(i + 1)
		}
		for k := 1; k <= n; k++ {
			p := float64(k) * 100 / float64(n) // exactly the k-th sample
			if got := Percentile(d, p); got != time.Duration(k) {
				t.Fatalf("n=%d p=%v: got rank %d, want %d", n, p, got, k)
			}
		}
	}
}

func TestPercentilesOf(t *testing.T) {
	d := make([]time.Duration, 0, 1000)
	for i := 1000; i >= 1; i-- { // unsorted
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	got := PercentilesOf(d)
	want := Percentiles{P50: 500 * time.Millisecond, P90: 900 * time.Millisecond, P99: 990 * time.Millisecond, Max: time.Second}
	if got != want {
		t.Errorf("PercentilesOf = %+v, want %+v", got, want)
	}
	if (PercentilesOf(nil) != Percentiles{}) {
		t.Errorf("PercentilesOf(nil) = %+v, want zeros", PercentilesOf(nil))
	}
}
