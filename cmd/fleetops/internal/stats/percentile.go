package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (nearest rank) of d, 0 when d is
// empty. d may be in any order and is not changed: a sorted d is read as it
// is, an unsorted one is sorted in a copy.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	if !slices.IsSorted(d) {
		d = slices.Sorted(slices.Values(d))
	}
	// The small epsilon keeps a rank that is whole in exact arithmetic
	// (n·p/100 = 99) from rounding up to the next one through float error.
	rank := int(math.Ceil(float64(len(d))*p/100-1e-9)) - 1
	return d[min(max(rank, 0), len(d)-1)]
}

// Percentiles are the percentiles the tables print.
type Percentiles struct {
	P50, P90, P99, Max time.Duration
}

// PercentilesOf returns the p50, p90, p99 and maximum of d (any order).
func PercentilesOf(d []time.Duration) Percentiles {
	if !slices.IsSorted(d) {
		d = slices.Sorted(slices.Values(d))
	}
	return Percentiles{P50: Percentile(d, 50), P90: Percentile(d, 90), P99: Percentile(d, 99), Max: Percentile(d, 100)}
}
