package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stats summarises one measurement.
type stats struct {
	Requests int64
	Errors   int64
	Elapsed  time.Duration
	P50, P90 time.Duration
	P99, Max time.Duration
	// FirstError is the first failure seen, for the report.
	FirstError string
}

// Throughput is completed requests (failed ones included) per second.
func (s stats) Throughput() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Requests) / s.Elapsed.Seconds()
}

// load runs op from concurrency goroutines in a closed loop until the
// duration has passed or the request budget is spent (whichever comes
// first), and measures each call. n numbers the calls from 0. The calls
// run with ctx itself, without a deadline: a call in flight at the end of
// the run completes (cutting it off would break the database connection
// under it and measure the breakage).
func load(ctx context.Context, concurrency int, duration time.Duration, requests int64, op func(ctx context.Context, n int64) error) stats {
	if duration <= 0 && requests <= 0 {
		return stats{} // unbounded: nothing to run
	}
	var (
		next     atomic.Int64
		errCount atomic.Int64
		firstErr sync.Once
		first    string
		wg       sync.WaitGroup
	)
	lat := make([][]time.Duration, concurrency)
	start := time.Now()
	deadline := start.Add(duration)
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil && (duration == 0 || time.Now().Before(deadline)) {
				n := next.Add(1) - 1
				if requests > 0 && n >= requests {
					break
				}
				t0 := time.Now()
				err := op(ctx, n)
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						break // interrupted: not a failure of the system under test
					}
					errCount.Add(1)
					firstErr.Do(func() { first = err.Error() })
				}
				mine = append(mine, d)
			}
			lat[w] = mine
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	return stats{
		Requests: int64(len(all)), Errors: errCount.Load(), Elapsed: elapsed,
		P50: percentile(all, 50), P90: percentile(all, 90), P99: percentile(all, 99), Max: percentile(all, 100),
		FirstError: first,
	}
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// do sends one API request with the role's token. It returns the body when
// keep is set; a status other than the expected one is an error.
func (h *harness) do(ctx context.Context, token string, r apiRequest, keep bool) ([]byte, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, h.cfg.BaseURL+r.path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []byte
	if keep || resp.StatusCode != r.status {
		out, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != r.status {
		return out, fmt.Errorf("%s %s: status %d, want %d: %.200s", r.method, r.path, resp.StatusCode, r.status, out)
	}
	return out, nil
}
