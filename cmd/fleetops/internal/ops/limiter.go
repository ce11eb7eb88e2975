package ops

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// limitedDemoToken is the demo data's acme-ratelimited token (5 per
// minute).
const limitedDemoToken = "flt_demoAcmeLimited00000000000000000"

// limiterTally counts the answers to a token driven past its limit.
type limiterTally struct {
	mu               sync.Mutex
	start            time.Time
	ok, limited      int
	other            int
	noRetryAfter     int
	firstLimitedAt   time.Duration
	okAfterExhausted int
}

// add counts res, answered at time at.
func (t *limiterTally) add(res result, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case res.ok(http.StatusOK):
		t.ok++
		if t.firstLimitedAt != 0 {
			t.okAfterExhausted++
		}
	case res.ok(http.StatusTooManyRequests):
		t.limited++
		if t.firstLimitedAt == 0 {
			t.firstLimitedAt = max(at.Sub(t.start), time.Nanosecond)
		}
		if res.header.Get("Retry-After") == "" {
			t.noRetryAfter++
		}
	default:
		t.other++
	}
}

// check prints the verdicts for a token of limit per minute driven for
// elapsed: the 200s within its budget, the surplus refused with 429 and
// Retry-After, nothing else.
func (t *limiterTally) check(c *checks, limit int, elapsed time.Duration) {
	bound := tokenBudget(limit, elapsed)
	c.expect(t.ok <= bound && t.ok >= limit, "200s within burst + refill: %d ≤ %d + %d×%.1f s/60 = %d", t.ok, limit, limit, elapsed.Seconds(), bound)
	c.expect(t.limited > 0 && t.noRetryAfter == 0, "the surplus was refused with 429 and Retry-After (%d without)", t.noRetryAfter)
	c.expect(t.other == 0, "no other status (%d)", t.other)
}

// limiterDemo shows the per-token limit: the demo token limited to 5 per
// minute, then a token with limit/min driven hard for window.
func limiterDemo(ctx context.Context, e *env, c *checks, r *replica, tok token, limit, conc int, window time.Duration) {
	client := newClient(conc, "")
	e.printf("\nlimiter: demo token acme-ratelimited (5 per minute), 7 requests in a row:\n")
	for i := range 7 {
		res := send(ctx, client, r.base(), call{method: http.MethodGet, path: "/api/v2/me", token: limitedDemoToken})
		e.printf("  #%d %d %-12s RateLimit-Limit %s Remaining %s Reset %s Retry-After %q\n", i+1, res.Status, res.Code,
			res.header.Get("RateLimit-Limit"), res.header.Get("RateLimit-Remaining"), res.header.Get("RateLimit-Reset"), res.header.Get("Retry-After"))
		if i == 5 {
			c.expect(res.ok(http.StatusTooManyRequests) && res.header.Get("Retry-After") != "", "the 6th request within a minute is 429 with Retry-After")
		}
	}
	e.logf("limiter: token %d (limit %d/min) driven by %d clients for %s", tok.ID, limit, conc, window)
	t := &limiterTally{start: time.Now()}
	stats.Drive(ctx, bounds(conc, window, 1_000_000), func(ctx context.Context, _ int, _ int64) {
		res := send(ctx, client, r.base(), call{method: http.MethodGet, path: "/api/v2/services", token: tok.Secret})
		t.add(res, time.Now())
	})
	if ctx.Err() != nil {
		return
	}
	elapsed := time.Since(t.start)
	e.printf("  %.1f s: 200×%d, 429×%d, other×%d; first 429 after %.2f s; 200s after the burst was spent: %d (refill %d/min = %.1f/s)\n",
		elapsed.Seconds(), t.ok, t.limited, t.other, t.firstLimitedAt.Seconds(), t.okAfterExhausted, limit, float64(limit)/60)
	t.check(c, limit, elapsed)
}
