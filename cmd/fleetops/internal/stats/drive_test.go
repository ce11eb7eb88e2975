package stats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDriveRequests: a request bound starts exactly that many calls,
// numbered 0 to n-1 once each, from workers in range.
func TestDriveRequests(t *testing.T) {
	for _, workers := range []int{1, 3, 16} {
		var mu sync.Mutex
		seen := map[int64]int{}
		badWorker := false
		started := Drive(context.Background(), Bounds{Workers: workers, Requests: 1000}, func(_ context.Context, w int, n int64) {
			mu.Lock()
			defer mu.Unlock()
			seen[n]++
			badWorker = badWorker || w < 0 || w >= workers
		})
		if started != 1000 || len(seen) != 1000 || badWorker {
			t.Fatalf("%d workers: started %d, %d distinct numbers, bad worker index %v", workers, started, len(seen), badWorker)
		}
		for n := range int64(1000) {
			if seen[n] != 1 {
				t.Fatalf("%d workers: call %d ran %d times", workers, n, seen[n])
			}
		}
	}
}

// TestDriveEnds: a duration bound, a cancelled context and the two bounds
// together each end the run; no bound at all runs nothing.
func TestDriveEnds(t *testing.T) {
	var calls atomic.Int64
	count := func(context.Context, int, int64) { calls.Add(1) }
	if n := Drive(context.Background(), Bounds{Workers: 4}, count); n != 0 || calls.Load() != 0 {
		t.Errorf("unbounded: %d started, %d calls", n, calls.Load())
	}
	if n := Drive(context.Background(), Bounds{Workers: 4, Duration: 20 * time.Millisecond}, count); n == 0 || n != calls.Load() {
		t.Errorf("duration only: %d started, %d calls", n, calls.Load())
	}
	calls.Store(0)
	if n := Drive(context.Background(), Bounds{Workers: 2, Duration: time.Hour, Requests: 10}, count); n != 10 || calls.Load() != 10 {
		t.Errorf("an hour or 10 requests: %d started, %d calls", n, calls.Load())
	}
	// Cancelled in the 50th call: the other workers go on until cancel
	// has taken effect (how many calls that is depends on the scheduler),
	// then each starts at most the one call it was about to start.
	ctx, cancel := context.WithCancel(context.Background())
	calls.Store(0)
	var atCancel atomic.Int64
	n := Drive(ctx, Bounds{Workers: 4, Duration: time.Hour}, func(context.Context, int, int64) {
		if calls.Add(1) == 50 {
			cancel()
			atCancel.Store(calls.Load())
		}
	})
	if n < 50 || n != calls.Load() || n > atCancel.Load()+4 {
		t.Errorf("cancelled in the 50th call: %d started, %d calls, %d when the cancel returned", n, calls.Load(), atCancel.Load())
	}
}

// TestMeasure: every completed call is timed, failures are counted with
// the first one kept, and calls that fail because the context ended are
// not failures of the system under test.
func TestMeasure(t *testing.T) {
	s := Measure(context.Background(), Bounds{Workers: 1, Requests: 10}, func(_ context.Context, n int64) error {
		if n%5 == 3 {
			return fmt.Errorf("call %d failed", n)
		}
		return nil
	})
	if s.Requests != 10 || s.Errors != 2 || s.FirstError != "call 3 failed" || s.Elapsed <= 0 || s.Max < s.P50 {
		t.Errorf("%+v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	s = Measure(ctx, Bounds{Workers: 2, Duration: time.Hour}, func(ctx context.Context, _ int64) error {
		if calls.Add(1) >= 20 {
			cancel()
			return ctx.Err()
		}
		return nil
	})
	if s.Errors != 0 || s.FirstError != "" || s.Requests != 19 {
		t.Errorf("interrupted: %+v (want 19 requests and no errors)", s)
	}
	if got := Measure(context.Background(), Bounds{Workers: 2}, func(context.Context, int64) error {
		return errors.New("ran")
	}); got != (Summary{}) {
		t.Errorf("unbounded: %+v", got)
	}
}
