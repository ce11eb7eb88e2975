package ops

import (
	"context"
	"flag"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
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
		m := loadMix(toks, strconv.FormatInt(time.Now().Unix(), 36))
		// Request numbers continue from the warm-up into the run, so that
		// the creates' keys never repeat.
		var seq atomic.Int64
		e.logf("warm-up: %d clients for %s", *conc, *warmup)
		stats.Drive(ctx, bounds(*conc, *warmup, *maxRequests), func(ctx context.Context, _ int, _ int64) {
			n := seq.Add(1)
			send(ctx, client, r.base(), m.pick(n).build(n))
		})
		q0, _ := queryCount(ctx, client, r.base())
		e.logf("measured run: %d clients for %s over %d endpoints (%s)", *conc, *d, len(m.entries), m.weights())
		rec := stats.NewRecorder()
		for _, ep := range m.entries {
			rec.Declare(ep.name)
		}
		n := stats.Drive(ctx, bounds(*conc, *d, *maxRequests), func(ctx context.Context, _ int, _ int64) {
			i := seq.Add(1)
			ep := m.pick(i)
			res := send(ctx, client, r.base(), ep.build(i))
			rec.Add(ep.name, res.Outcome, res.ok(ep.want))
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		elapsed := rec.Elapsed()
		q1, _ := queryCount(ctx, client, r.base())
		e.printf("\nload: %d clients, %s, one replica, demo data; %d cores shared by the clients, the replica and PostgreSQL\n",
			*conc, elapsed.Round(time.Second), runtime.NumCPU())
		rec.Table(e.out, elapsed)
		e.printf("throughput per 30 s:\n")
		rec.Timeline(e.out, []string{"2xx", "4xx", "429", "503", "5xx", "error"}, 30, nil)
		answered, statuses, errs := rec.Totals()
		unexpected, _ := rec.Failures("")
		fivexx := stats.ServerErrors(statuses)
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
