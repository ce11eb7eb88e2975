package ops

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// failoverPhase drives both replicas with a high-limit token, stops A with
// SIGTERM at stopAt, and fails requests over to B on a transport error.
func failoverPhase(ctx context.Context, e *env, c *checks, a, b *replica, tok token, conc int, d, stopAt time.Duration, maxRequests int64) {
	e.logf("phase 2: token %d driven at both replicas by %d clients for %s; SIGTERM to %s at %s", tok.ID, conc, d, a.name, stopAt)
	client := newClient(conc, "")
	rec := stats.NewRecorder()
	paths := []string{"/api/v2/me", "/api/v2/services?per_page=50", "/api/v2/services/due", "/api/v2/reports", "/api/v2/events"}
	var (
		aDown             atomic.Bool
		stopSent          atomic.Int64 // unix nanoseconds of the SIGTERM
		failovers, failed atomic.Int64
		aAfterStop        atomic.Int64
		shutdownTook      time.Duration
		shutdownErr       error
		wg                sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			return
		case <-time.After(stopAt):
		}
		e.logf("SIGTERM to %s", a.name)
		stopSent.Store(time.Now().UnixNano())
		shutdownTook, shutdownErr = a.terminate(30 * time.Second)
		e.logf("%s exited %s after SIGTERM (%v)", a.name, shutdownTook.Round(time.Millisecond), shutdownErr)
	}()
	stats.Drive(ctx, bounds(conc, d, maxRequests), func(ctx context.Context, _ int, n int64) {
		i := n + 1
		path := paths[i%int64(len(paths))]
		order := []*replica{a, b}
		if i%2 == 1 || aDown.Load() {
			order = []*replica{b, a}
		}
		if aDown.Load() {
			order = order[:1]
		}
		for k, r := range order {
			res := send(ctx, client, r.base(), call{method: http.MethodGet, path: path, token: tok.Secret})
			rec.Add(r.name, res.Outcome, res.Status == http.StatusOK)
			rec.Mark(r.name + " " + stats.Class(res.Outcome))
			if r == a && res.Err == nil && stopSent.Load() != 0 {
				aAfterStop.Add(1)
			}
			if res.Err == nil {
				if res.Status >= 500 {
					failed.Add(1)
					rec.Mark("failed")
				}
				return
			}
			if r == a && stopSent.Load() != 0 {
				aDown.Store(true) // a load balancer's health check would do the same
			}
			if k+1 < len(order) {
				failovers.Add(1)
				rec.Mark("failover")
				continue
			}
			failed.Add(1)
			rec.Mark("failed")
		}
	})
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	elapsed := rec.Elapsed()
	e.printf("\nfailover: %s stopped with SIGTERM at %s under load\n", a.name, stopAt)
	rec.Table(e.out, elapsed)
	e.printf("per second (%s gets SIGTERM at %.0f s):\n", a.name, stopAt.Seconds())
	rec.Timeline(e.out, []string{a.name + " 2xx", a.name + " error", "failover", b.name + " 2xx", b.name + " error", "failed"}, 2, nil)
	_, statuses, _ := rec.Totals()
	fivexx := stats.ServerErrors(statuses)
	bBad, bErrors := rec.Failures(b.name)
	e.printf("  %s answered %d requests after SIGTERM was sent (in flight or on open connections); shutdown took %s\n",
		a.name, aAfterStop.Load(), shutdownTook.Round(time.Millisecond))
	e.printf("  failovers to %s after a transport error from %s: %d\n", b.name, a.name, failovers.Load())
	stopped := len(a.logLines("stopped")) == 1 && len(a.logLines("shutting down")) == 1
	c.expect(shutdownErr == nil && stopped, "%s shut down cleanly (exit 0, logged \"shutting down\" and \"stopped\")", a.name)
	c.expect(fivexx == 0, "no 5xx from either replica (%d)", fivexx)
	c.expect(failed.Load() == 0, "no request failed after failover (%d)", failed.Load())
	c.expect(bErrors == 0 && bBad == 0, "the surviving %s had no transport error (%d) and only 200s (%d other)", b.name, bErrors, bBad)
	c.expect(b.running(), "%s still runs", b.name)
	if res := send(ctx, client, b.base(), call{method: http.MethodGet, path: "/readyz"}); res.Err == nil {
		c.expect(res.Status == http.StatusOK, "%s /readyz answers 200 (%d)", b.name, res.Status)
	}
}
