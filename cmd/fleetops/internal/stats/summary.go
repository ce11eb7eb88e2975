package stats

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Summary is one measurement of the bench harness: calls, failures and
// latency percentiles.
type Summary struct {
	Percentiles
	// Requests counts the completed calls, failed ones included.
	Requests int64
	// Errors counts the failed calls.
	Errors  int64
	Elapsed time.Duration
	// FirstError is the first failure seen, for the report.
	FirstError string
}

// Throughput is completed calls (failed ones included) per second.
func (s Summary) Throughput() float64 { return Rate(s.Requests, s.Elapsed) }

// Measure runs op like Drive and times each call. A call that fails
// because ctx ended is neither counted nor timed: an interruption is not a
// failure of the system under test. The calls run with ctx itself, without
// a deadline: a call in flight at the end completes (cutting it off would
// break the connection under it and measure the breakage). An unbounded
// measurement (no duration, no request count) runs nothing.
func Measure(ctx context.Context, b Bounds, op func(ctx context.Context, n int64) error) Summary {
	if b.Duration <= 0 && b.Requests <= 0 {
		return Summary{}
	}
	var (
		mu       sync.Mutex
		errCount int64
		first    string
	)
	lat := make([][]time.Duration, b.Workers) // one slice a worker: no lock on the hot path
	start := time.Now()
	Drive(ctx, b, func(ctx context.Context, worker int, n int64) {
		t0 := time.Now()
		err := op(ctx, n)
		d := time.Since(t0)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			errCount++
			if first == "" {
				first = err.Error()
			}
			mu.Unlock()
		}
		lat[worker] = append(lat[worker], d)
	})
	all := slices.Concat(lat...)
	slices.Sort(all)
	return Summary{
		Percentiles: PercentilesOf(all),
		Requests:    int64(len(all)), Errors: errCount, Elapsed: time.Since(start), FirstError: first,
	}
}
