package ops

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// sharedLimitPhase (phase 1) drives a token with a small limit at both
// replicas and checks that the sum of their 200s stays within one budget,
// and the headers of every answer.
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
		limitHeaderOK = true
	)
	start := time.Now()
	n := stats.Drive(ctx, bounds(conc, window, maxRequests), func(ctx context.Context, _ int, i int64) {
		r := reps[(i+1)%int64(len(reps))]
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
		if res.Err == nil && res.header.Get("RateLimit-Limit") != strconv.Itoa(limit) {
			limitHeaderOK = false
		}
		switch {
		case res.Err != nil:
			other[r.name+" "+stats.ErrKind(res.Err)]++
		case res.Status == http.StatusOK:
			ok[r.name]++
		case res.Status == http.StatusTooManyRequests:
			limited[r.name]++
			ra, err := strconv.Atoi(res.header.Get("Retry-After"))
			if err != nil || ra < 1 {
				noRetryAfter++
			} else {
				retryMin, retryMax = min(retryMin, ra), max(retryMax, ra)
			}
			if res.Code != "RATE_LIMITED" || res.header.Get("RateLimit-Remaining") != "0" || res.header.Get("RateLimit-Reset") == "" {
				badHeaders++
			}
		default:
			other[r.name+" "+strconv.Itoa(res.Status)]++
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
	bound := tokenBudget(limit, elapsed)
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
