package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// loadRun: one replica, a fixed number of clients for a fixed time over a
// mix of every endpoint with high-limit tokens of four account types; then
// the limiter at work on a token with a small limit.
func loadRun(fs *flag.FlagSet) func(context.Context, *env) error {
	conc := fs.Int("concurrency", 16, "concurrent clients")
	d := fs.Duration("duration", 3*time.Minute, "length of the measured run")
	warmup := fs.Duration("warmup", 5*time.Second, "unmeasured warm-up before the run")
	maxRequests := fs.Int64("max-requests", 2_000_000, "upper bound on the requests of the run")
	limit := fs.Int("limit", 600, "rate limit (requests per minute) of the limiter demonstration's token")
	limitFor := fs.Duration("limit-window", 20*time.Second, "length of the limiter demonstration")
	return func(ctx context.Context, e *env) error {
		dbURL, err := e.freshDatabase(ctx, "fleetapi_ops_load")
		if err != nil {
			return err
		}
		const high = 100_000_000
		toks := map[string]token{}
		for _, p := range []struct{ key, account string }{
			{"admin", "admin"}, {"manager", "fleetco"}, {"user", "acme"}, {"subaccount", "acme-night"},
		} {
			t, err := e.createToken(ctx, dbURL, p.account, "ops-load-"+p.key, high)
			if err != nil {
				return err
			}
			toks[p.key] = t
		}
		limited, err := e.createToken(ctx, dbURL, "acme", "ops-load-limited", *limit)
		if err != nil {
			return err
		}
		r, err := e.startReplica(ctx, "replica", map[string]string{"FLEET_DATABASE_URL": dbURL})
		if err != nil {
			return err
		}
		c := &checks{e: e}
		client := newClient(*conc, "")
		mix := loadMix(toks)
		e.logf("warm-up: %d clients for %s", *conc, *warmup)
		var seq atomic.Int64
		drive(ctx, *conc, *warmup, *maxRequests, func(ctx context.Context, w int) {
			k, _ := mix.next(seq.Add(1), w)
			send(ctx, client, r.base(), k)
		})
		q0, _ := queryCount(ctx, client, r.base())
		e.logf("measured run: %d clients for %s over %d endpoints (%s)", *conc, *d, len(mix.entries), mix.weights())
		rec := newRecorder()
		for _, ep := range mix.entries {
			rec.declare(ep.name)
		}
		n := drive(ctx, *conc, *d, *maxRequests, func(ctx context.Context, w int) {
			k, ep := mix.next(seq.Add(1), w)
			res := send(ctx, client, r.base(), k)
			rec.add(ep.name, res, res.err == nil && res.status == ep.want)
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		elapsed := time.Since(rec.start)
		q1, _ := queryCount(ctx, client, r.base())
		e.printf("\nload: %d clients, %s, one replica, demo data; %d cores shared by the clients, the replica and PostgreSQL\n",
			*conc, elapsed.Round(time.Second), runtime.NumCPU())
		rec.table(e.out, elapsed)
		e.printf("throughput per 30 s:\n")
		rec.timeline(e.out, []string{"2xx", "4xx", "429", "503", "5xx", "error"}, 30, nil)
		answered, statuses, errs := rec.totals()
		unexpected := 0
		for _, s := range rec.eps {
			unexpected += s.unexpected
		}
		fivexx := 0
		for st, k := range statuses {
			if st >= 500 {
				fivexx += k
			}
		}
		e.printf("  requests started %d, answered %d, %.1f SQL statements per request (server's go_sql_query_timing count)\n",
			n, answered, (q1-q0)/math.Max(1, float64(answered)))
		c.expect(errs == 0, "no transport error (%d)", errs)
		c.expect(fivexx == 0, "no 5xx (%d)", fivexx)
		c.expect(statuses[http.StatusTooManyRequests] == 0, "the high-limit tokens were never limited (%d 429s)", statuses[http.StatusTooManyRequests])
		c.expect(unexpected == 0, "every answer had its expected status (%d did not)", unexpected)
		limiterDemo(ctx, e, c, r, limited, *limit, *conc, *limitFor)
		return c.err()
	}
}

// endpoint is one entry of a load mix.
type endpoint struct {
	name   string
	weight int
	want   int
	build  func(seq int64, worker int) call
}

type mix struct {
	entries []endpoint
	total   int
}

func (m mix) weights() string {
	s := ""
	for i, e := range m.entries {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d%%", e.name, e.weight*100/m.total)
	}
	return s
}

// next picks the endpoint for request seq in proportion to the weights.
func (m mix) next(seq int64, worker int) (call, endpoint) {
	// A multiplicative hash spreads the sequence over the weights evenly
	// without a shared random source.
	x := int((uint64(seq)*2654435761)>>7) % m.total
	for _, e := range m.entries {
		if x < e.weight {
			return e.build(seq, worker), e
		}
		x -= e.weight
	}
	e := m.entries[len(m.entries)-1]
	return e.build(seq, worker), e
}

// loadMix is the endpoint mix of the load run: reads over every route by
// admin, manager, user and subaccount tokens, and passenger creates with
// an Idempotency-Key.
func loadMix(t map[string]token) mix {
	readers := []string{t["admin"].Secret, t["manager"].Secret, t["user"].Secret, t["subaccount"].Secret}
	eventReaders := readers[:3] // the demo subaccount lacks event_notifications (403)
	get := func(path string, toks []string) func(int64, int) call {
		return func(seq int64, _ int) call {
			return call{method: http.MethodGet, path: path, token: toks[seq%int64(len(toks))]}
		}
	}
	runID := strconv.FormatInt(time.Now().Unix(), 36)
	m := mix{entries: []endpoint{
		{"GET /me", 10, 200, get("/api/v2/me", readers)},
		{"GET /services", 15, 200, get("/api/v2/services?per_page=50", readers)},
		{"GET /services search+sort", 10, 200, get("/api/v2/services?search=oil&sort=name&order=desc&per_page=20", readers)},
		{"GET /services/due", 15, 200, get("/api/v2/services/due", readers)},
		{"GET /reports", 10, 200, get("/api/v2/reports", readers)},
		{"GET /events", 10, 200, get("/api/v2/events?page=1&per_page=10", eventReaders)},
		{"GET /events/{id}", 15, 200, func(seq int64, _ int) call {
			return call{method: http.MethodGet, path: "/api/v2/events/" + strconv.FormatInt(seq%4+1, 10), token: t["admin"].Secret}
		}},
		{"POST /passengers", 15, 201, func(seq int64, _ int) call {
			key := "load-" + runID + "-" + strconv.FormatInt(seq, 36)
			body, _ := json.Marshal(map[string]any{
				"passenger_name": "Load " + key, "passenger_assign_id": key, "passenger_phone": "+351000000",
			})
			return call{method: http.MethodPost, path: "/api/v2/passengers", token: t["user"].Secret, body: body,
				header: http.Header{"Idempotency-Key": {key}}}
		}},
	}}
	for _, e := range m.entries {
		m.total += e.weight
	}
	return m
}

// limiterDemo shows the per-token limit: the demo token limited to 5 per
// minute, then a token with limit/min driven hard for window.
func limiterDemo(ctx context.Context, e *env, c *checks, r *replica, tok token, limit, conc int, window time.Duration) {
	client := newClient(conc, "")
	e.printf("\nlimiter: demo token acme-ratelimited (5 per minute), 7 requests in a row:\n")
	for i := range 7 {
		res := send(ctx, client, r.base(), call{method: http.MethodGet, path: "/api/v2/me", token: "flt_demoAcmeLimited00000000000000000"})
		e.printf("  #%d %d %-12s RateLimit-Limit %s Remaining %s Reset %s Retry-After %q\n", i+1, res.status, res.code,
			res.header.Get("RateLimit-Limit"), res.header.Get("RateLimit-Remaining"), res.header.Get("RateLimit-Reset"), res.header.Get("Retry-After"))
		if i == 5 {
			c.expect(res.status == http.StatusTooManyRequests && res.header.Get("Retry-After") != "", "the 6th request within a minute is 429 with Retry-After")
		}
	}
	e.logf("limiter: token %d (limit %d/min) driven by %d clients for %s", tok.ID, limit, conc, window)
	var (
		mu               sync.Mutex
		ok, lim, other   int
		noRetry          int
		firstLimitedAt   time.Duration
		okAfterExhausted int
	)
	start := time.Now()
	drive(ctx, conc, window, 1_000_000, func(ctx context.Context, _ int) {
		res := send(ctx, client, r.base(), call{method: http.MethodGet, path: "/api/v2/services", token: tok.Secret})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case res.err == nil && res.status == http.StatusOK:
			ok++
			if firstLimitedAt != 0 {
				okAfterExhausted++
			}
		case res.err == nil && res.status == http.StatusTooManyRequests:
			lim++
			if firstLimitedAt == 0 {
				firstLimitedAt = time.Since(start)
			}
			if res.header.Get("Retry-After") == "" {
				noRetry++
			}
		default:
			other++
		}
	})
	if ctx.Err() != nil {
		return
	}
	elapsed := time.Since(start)
	bound := limit + int(math.Ceil(float64(limit)*elapsed.Seconds()/60))
	e.printf("  %.1f s: 200×%d, 429×%d, other×%d; first 429 after %.2f s; 200s after the burst was spent: %d (refill %d/min = %.1f/s)\n",
		elapsed.Seconds(), ok, lim, other, firstLimitedAt.Seconds(), okAfterExhausted, limit, float64(limit)/60)
	c.expect(ok <= bound && ok >= limit, "200s within burst + refill: %d ≤ %d + %d×%.1f s/60 = %d", ok, limit, limit, elapsed.Seconds(), bound)
	c.expect(lim > 0 && noRetry == 0, "the surplus was refused with 429 and Retry-After (%d without)", noRetry)
	c.expect(other == 0, "no other status (%d)", other)
}
