package stats

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds bound a closed-loop run: Workers goroutines call one after the
// other until Duration has passed (no time bound when 0) or Requests calls
// have started (no count bound when 0), whichever comes first.
type Bounds struct {
	Workers  int
	Duration time.Duration
	Requests int64
}

// Drive runs work from b.Workers goroutines in a closed loop within b or
// until ctx ends; n numbers the calls from 0 across workers, worker is the
// calling goroutine's index (0 to Workers-1). Calls in flight when the
// bound is reached finish. It returns how many calls started. With neither
// a duration nor a request count it starts none.
func Drive(ctx context.Context, b Bounds, work func(ctx context.Context, worker int, n int64)) int64 {
	if b.Duration <= 0 && b.Requests <= 0 {
		return 0
	}
	deadline := time.Now().Add(b.Duration)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range b.Workers {
		wg.Go(func() {
			for ctx.Err() == nil && (b.Duration <= 0 || time.Now().Before(deadline)) {
				n := next.Add(1) - 1
				if b.Requests > 0 && n >= b.Requests {
					return
				}
				work(ctx, w, n)
			}
		})
	}
	wg.Wait()
	started := next.Load()
	if b.Requests > 0 {
		started = min(started, b.Requests)
	}
	return started
}
