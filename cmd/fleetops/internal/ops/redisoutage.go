package ops

import (
	"context"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// ratelimitRetry is how long a replica stays on its local limits after a
// Redis failure (api/ratelimit.RetryInterval; nothing imports api).
const ratelimitRetry = 2 * time.Second

// redisOutagePhase starts two more replicas on a private Redis, drives a
// small-limit token at both, stops that Redis for a while and starts it
// again (empty, as after a restart without persistence).
func redisOutagePhase(ctx context.Context, e *env, c *checks, dbURL string, tok token, limit, conc int, step time.Duration) error {
	rd, err := e.startPrivateRedis(ctx, "")
	if err != nil {
		return err
	}
	url := "redis://" + rd.addr + "/0"
	vars := map[string]string{"FLEET_DATABASE_URL": dbURL, "FLEET_REDIS_URL": url}
	reps, err := e.startReplicas(ctx, vars, "replica-c", "replica-d")
	if err != nil {
		return err
	}
	x, y := reps[0], reps[1]
	e.logf("phase 3: token %d (limit %d/min) at replicas c and d on a private Redis %s; Redis stopped at %s, started again at %s",
		tok.ID, limit, rd.addr, step, 2*step)
	client := newClient(conc, "")
	rec := stats.NewRecorder()
	var (
		mu      sync.Mutex
		stage   atomic.Int32 // 0 Redis up, 1 down (until the replicas went back to it), 2 back
		ok      [3]int
		lats    [3][]time.Duration
		marks   [4]time.Time // stage starts, and the end
		cycleWG sync.WaitGroup
		cycErr  error
	)
	// A request counts in the stage in which it was sent; a quarter of a
	// second between a stage's start and the change of Redis lets the
	// requests of the stage before finish first.
	const settle = 250 * time.Millisecond
	setStage := func(s int32) {
		mu.Lock()
		marks[s] = time.Now()
		mu.Unlock()
		stage.Store(s)
	}
	cycleWG.Add(1)
	go func() {
		defer cycleWG.Done()
		sleep := func(d time.Duration) bool {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(d):
				return true
			}
		}
		if !sleep(step - settle) {
			return
		}
		setStage(1)
		if !sleep(settle) {
			return
		}
		rd.stop()
		e.logf("private Redis stopped")
		if !sleep(step) {
			return
		}
		setStage(2) // from the restart on, so that the fresh Redis's burst counts here
		if _, err := e.startPrivateRedis(ctx, rd.addr); err != nil {
			cycErr = err
			return
		}
		e.logf("private Redis started again (empty); the replicas return to it within %s", ratelimitRetry)
	}()
	setStage(0)
	stats.Drive(ctx, bounds(conc, 3*step+ratelimitRetry, 1_000_000), func(ctx context.Context, _ int, n int64) {
		r := reps[(n+1)%2]
		s := stage.Load()
		res := send(ctx, client, r.base(), call{method: http.MethodGet, path: "/api/v2/me", token: tok.Secret})
		rec.Add(r.name, res.Outcome, res.ok(http.StatusOK, http.StatusTooManyRequests))
		rec.Mark(r.name + " " + stats.Class(res.Outcome))
		mu.Lock()
		defer mu.Unlock()
		if res.ok(http.StatusOK) {
			ok[s]++
		}
		lats[s] = append(lats[s], res.Latency)
	})
	marks[3] = time.Now()
	cycleWG.Wait()
	if cycErr != nil {
		return cycErr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	secs := step.Seconds()
	e.printf("\nRedis outage under two replicas (private Redis %s; stopped at %.0f s, started again empty at %.0f s):\n", rd.addr, secs, 2*secs)
	rec.Timeline(e.out, []string{x.name + " 2xx", x.name + " 429", y.name + " 2xx", y.name + " 429", "5xx", "error"}, 2, func(from, to int) string {
		switch {
		case from <= int(secs) && int(secs) <= to:
			return "← Redis stopped"
		case from <= int(2*secs) && int(2*secs) <= to:
			return "← Redis started"
		}
		return ""
	})
	dur := [3]time.Duration{marks[1].Sub(marks[0]), marks[2].Sub(marks[1]), marks[3].Sub(marks[2])}
	bound := redisOutageBounds(limit, dur, settle)
	names := []string{"Redis up", "Redis down", "Redis back"}
	what := []string{"one shared budget", "a budget per replica", "a fresh shared budget + local refill for 2 s"}
	for i := range 3 {
		l := stats.PercentilesOf(lats[i])
		e.printf("  %-10s %5.1f s: 200×%d (%s: ≤ %d)  p50 %s ms p99 %s ms max %s ms\n",
			names[i], dur[i].Seconds(), ok[i], what[i], bound[i], ms(l.P50), ms(l.P99), ms(l.Max))
	}
	_, st, errs := rec.Totals()
	fivexx := stats.ServerErrors(st)
	c.expect(fivexx == 0 && errs == 0, "a Redis outage costs no 5xx and no failed request (%d 5xx, %d errors)", fivexx, errs)
	c.expect(ok[0] <= bound[0], "Redis up: one shared budget (%d ≤ %d)", ok[0], bound[0])
	c.expect(ok[1] <= bound[1], "Redis down: each replica limits on its own (%d ≤ %d)", ok[1], bound[1])
	c.expect(ok[2] <= bound[2], "Redis back: one shared budget again (%d ≤ %d)", ok[2], bound[2])
	e.printf("  (while Redis is down each replica limits from its own buckets: with N replicas a token gets up to N× its limit)\n")
	return nil
}

// redisOutageBounds are the most 200s a token of limit per minute may get
// in each stage of the Redis outage phase, of lengths dur: one shared
// budget while Redis is up; one budget per replica (two) while it is
// down; when it is back, a fresh shared budget (the restarted Redis is
// empty) plus what the replicas' local buckets refill during the
// ratelimitRetry (and settle) for which they keep using them after their
// last failure.
func redisOutageBounds(limit int, dur [3]time.Duration, settle time.Duration) [3]int {
	fallbackRefill := int(math.Ceil(float64(limit) * (ratelimitRetry + settle).Seconds() / 60))
	return [3]int{tokenBudget(limit, dur[0]), 2 * tokenBudget(limit, dur[1]), tokenBudget(limit, dur[2]) + 2*fallbackRefill}
}
