package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicasRun: two replicas on one database and one Redis. Phase 1 drives
// a token with a small limit at both and checks that the sum of their 200s
// stays within one budget; phase 2 drives a high-limit token at both, sends
// SIGTERM to replica A mid-load and checks that nothing failed.
func replicasRun(fs *flag.FlagSet) func(context.Context, *env) error {
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "Redis shared by the two replicas")
	conc := fs.Int("concurrency", 16, "concurrent clients")
	limit := fs.Int("limit", 120, "rate limit (requests per minute) of the shared-limit token")
	window := fs.Duration("window", 15*time.Second, "length of the shared-limit phase")
	failover := fs.Duration("failover", 30*time.Second, "length of the failover phase")
	stopAt := fs.Duration("stop-at", 10*time.Second, "when, in the failover phase, replica A gets SIGTERM")
	maxRequests := fs.Int64("max-requests", 300_000, "upper bound on the requests of each phase")
	redisStep := fs.Duration("redis-outage", 10*time.Second, "phase 3: Redis up, down and back for this long each (0 skips the phase)")
	return func(ctx context.Context, e *env) error {
		if err := e.ensureRedis(ctx); err != nil {
			return err
		}
		dbURL, err := e.freshDatabase(ctx, "fleetapi_ops_replicas")
		if err != nil {
			return err
		}
		limited, err := e.createToken(ctx, dbURL, "acme", "ops-shared-limit", *limit)
		if err != nil {
			return err
		}
		bulk, err := e.createToken(ctx, dbURL, "fleetco", "ops-bulk", 10_000_000)
		if err != nil {
			return err
		}
		// Token ids restart in every fresh database, and Redis keys are
		// "rate:token:<id>": start the run's tokens from full budgets.
		rc, err := redisClient(*redisURL)
		if err != nil {
			return err
		}
		defer rc.Close()
		keys := []string{fmt.Sprintf("rate:token:%d", limited.ID), fmt.Sprintf("rate:token:%d", bulk.ID)}
		if err := rc.Del(ctx, keys...).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		vars := map[string]string{"FLEET_DATABASE_URL": dbURL, "FLEET_REDIS_URL": *redisURL}
		a, err := e.startReplica(ctx, "replica-a", vars)
		if err != nil {
			return err
		}
		b, err := e.startReplica(ctx, "replica-b", vars)
		if err != nil {
			return err
		}
		c := &checks{e: e}
		sharedLimitPhase(ctx, e, c, []*replica{a, b}, limited, *limit, *conc, *window, *maxRequests)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n, err := rc.Exists(ctx, keys[0]).Result(); err == nil {
			e.printf("  Redis holds the token's bucket: EXISTS %s = %d\n", keys[0], n)
		}
		failoverPhase(ctx, e, c, a, b, bulk, *conc, *failover, *stopAt, *maxRequests)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if *redisStep > 0 {
			tok, err := e.createToken(ctx, dbURL, "acme", "ops-redis-outage", *limit)
			if err != nil {
				return err
			}
			if err := redisOutagePhase(ctx, e, c, dbURL, tok, *limit, *conc, *redisStep); err != nil {
				return err
			}
		}
		return c.err()
	}
}

func redisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	return redis.NewClient(opt), nil
}

func sharedLimitPhase(ctx context.Context, e *env, c *checks, reps []*replica, tok token, limit, conc int, window time.Duration, maxRequests int64) {
	e.logf("phase 1: token %d (limit %d/min) driven at both replicas by %d clients for %s", tok.ID, limit, conc, window)
	client := newClient(conc, "")
	var (
		mu            sync.Mutex
		ok, limited   = map[string]int{}, map[string]int{}
		other         = map[string]int{}
		noRetryAfter  int
		retryMin      = math.MaxInt
		retryMax      int
		badHeaders    int
		first, last   time.Time
		next          atomic.Int64
		limitHeaderOK = true
	)
	start := time.Now()
	n := drive(ctx, conc, window, maxRequests, func(ctx context.Context, _ int) {
		r := reps[next.Add(1)%int64(len(reps))]
		sent := time.Now()
		res := send(ctx, client, r.base(), call{method: http.MethodGet, path: "/api/v2/me", token: tok.Secret})
		mu.Lock()
		defer mu.Unlock()
		if first.IsZero() || sent.Before(first) {
			first = sent
		}
		if now := time.Now(); now.After(last) {
			last = now
		}
		if res.err == nil && res.header.Get("RateLimit-Limit") != strconv.Itoa(limit) {
			limitHeaderOK = false
		}
		switch {
		case res.err != nil:
			other[r.name+" "+errKind(res.err)]++
		case res.status == http.StatusOK:
			ok[r.name]++
		case res.status == http.StatusTooManyRequests:
			limited[r.name]++
			ra, err := strconv.Atoi(res.header.Get("Retry-After"))
			if err != nil || ra < 1 {
				noRetryAfter++
			} else {
				retryMin, retryMax = min(retryMin, ra), max(retryMax, ra)
			}
			if res.code != "RATE_LIMITED" || res.header.Get("RateLimit-Remaining") != "0" || res.header.Get("RateLimit-Reset") == "" {
				badHeaders++
			}
		default:
			other[r.name+" "+strconv.Itoa(res.status)]++
		}
	})
	if ctx.Err() != nil {
		return
	}
	elapsed := last.Sub(first)
	if first.IsZero() {
		elapsed = time.Since(start)
	}
	total200 := ok[reps[0].name] + ok[reps[1].name]
	bound := limit + int(math.Ceil(float64(limit)*elapsed.Seconds()/60))
	e.printf("\nshared limit across two replicas (Redis):\n")
	e.printf("  requests sent: %d in %.1f s (%.0f/s)\n", n, elapsed.Seconds(), float64(n)/elapsed.Seconds())
	e.printf("  200: %s %d + %s %d = %d\n", reps[0].name, ok[reps[0].name], reps[1].name, ok[reps[1].name], total200)
	e.printf("  429: %s %d + %s %d = %d; Retry-After %d..%d s\n", reps[0].name, limited[reps[0].name], reps[1].name,
		limited[reps[1].name], limited[reps[0].name]+limited[reps[1].name], retryMin, retryMax)
	if len(other) > 0 {
		e.printf("  other answers: %v\n", other)
	}
	e.printf("  budget: burst %d + refill %d/min × %.1f s = %d; two separate per-replica limits would allow up to %d\n",
		limit, limit, elapsed.Seconds(), bound, 2*bound)
	c.expect(total200 <= bound, "the sum of 200s over both replicas (%d) stays within one token budget (%d)", total200, bound)
	c.expect(total200 >= limit, "the whole burst was usable (%d ≥ %d)", total200, limit)
	c.expect(ok[reps[0].name] > 0 && ok[reps[1].name] > 0, "both replicas answered 200s from the shared budget")
	c.expect(noRetryAfter == 0, "every 429 carries Retry-After ≥ 1 (%d without)", noRetryAfter)
	c.expect(badHeaders == 0, "every 429 is RATE_LIMITED with RateLimit-Remaining 0 and RateLimit-Reset (%d not)", badHeaders)
	c.expect(limitHeaderOK, "every answer carries RateLimit-Limit: %d", limit)
	c.expect(len(other) == 0, "no other status and no transport error")
}

// failoverPhase drives both replicas with a high-limit token, stops A with
// SIGTERM at stopAt, and fails requests over to B on a transport error.
func failoverPhase(ctx context.Context, e *env, c *checks, a, b *replica, tok token, conc int, d, stopAt time.Duration, maxRequests int64) {
	e.logf("phase 2: token %d driven at both replicas by %d clients for %s; SIGTERM to %s at %s", tok.ID, conc, d, a.name, stopAt)
	client := newClient(conc, "")
	rec := newRecorder()
	paths := []string{"/api/v2/me", "/api/v2/services?per_page=50", "/api/v2/services/due", "/api/v2/reports", "/api/v2/events"}
	var (
		next              atomic.Int64
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
	drive(ctx, conc, d, maxRequests, func(ctx context.Context, _ int) {
		i := next.Add(1)
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
			rec.add(r.name, res, res.status == http.StatusOK)
			rec.mark(r.name + " " + class(res))
			if r == a && res.err == nil && stopSent.Load() != 0 {
				aAfterStop.Add(1)
			}
			if res.err == nil {
				if res.status >= 500 {
					failed.Add(1)
					rec.mark("failed")
				}
				return
			}
			if r == a && stopSent.Load() != 0 {
				aDown.Store(true) // a load balancer's health check would do the same
			}
			if k+1 < len(order) {
				failovers.Add(1)
				rec.mark("failover")
				continue
			}
			failed.Add(1)
			rec.mark("failed")
		}
	})
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	elapsed := time.Since(rec.start)
	e.printf("\nfailover: %s stopped with SIGTERM at %s under load\n", a.name, stopAt)
	rec.table(e.out, elapsed)
	e.printf("per second (%s gets SIGTERM at %.0f s):\n", a.name, stopAt.Seconds())
	rec.timeline(e.out, []string{a.name + " 2xx", a.name + " error", "failover", b.name + " 2xx", b.name + " error", "failed"}, 2, nil)
	_, statuses, _ := rec.totals()
	fivexx := 0
	for st, n := range statuses {
		if st >= 500 {
			fivexx += n
		}
	}
	bStats := rec.eps[b.name]
	bErrors, bBad := 0, 0
	if bStats != nil {
		for _, n := range bStats.errors {
			bErrors += n
		}
		bBad = bStats.unexpected
	}
	e.printf("  %s answered %d requests after SIGTERM was sent (in flight or on open connections); shutdown took %s\n",
		a.name, aAfterStop.Load(), shutdownTook.Round(time.Millisecond))
	e.printf("  failovers to %s after a transport error from %s: %d\n", b.name, a.name, failovers.Load())
	stopped := len(a.logLines("stopped")) == 1 && len(a.logLines("shutting down")) == 1
	c.expect(shutdownErr == nil && stopped, "%s shut down cleanly (exit 0, logged \"shutting down\" and \"stopped\")", a.name)
	c.expect(fivexx == 0, "no 5xx from either replica (%d)", fivexx)
	c.expect(failed.Load() == 0, "no request failed after failover (%d)", failed.Load())
	c.expect(bErrors == 0 && bBad == 0, "the surviving %s had no transport error (%d) and only 200s (%d other)", b.name, bErrors, bBad)
	c.expect(b.running(), "%s still runs", b.name)
	if res := send(ctx, client, b.base(), call{method: http.MethodGet, path: "/readyz"}); res.err == nil {
		c.expect(res.status == http.StatusOK, "%s /readyz answers 200 (%d)", b.name, res.status)
	}
}
