package ops

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// The flood run's client addresses, all on loopback: each client binds
// its own source address (net.Dialer.LocalAddr), because the guard keeps
// the failed-authentication budget by address.
const (
	goodSource      = "127.0.0.1"
	badTokenSource  = "127.0.0.2"
	malformedSource = "127.0.0.3"
	slowSource      = "127.0.0.4"
	slowGoodSource  = "127.0.0.5"
)

// floodRun: one replica; a good client from 127.0.0.1; a flood of bad
// tokens and malformed requests from 127.0.0.2; malformed requests with a
// valid token from 127.0.0.3. It counts the SQL statements the replica ran
// in each phase and compares the good client's latency with and without
// the flood; a fifth phase floods from the good client's own address, a
// sixth holds slow connections from 127.0.0.4.
func floodRun(fs *flag.FlagSet) func(context.Context, *env) error {
	bad := fs.Int("concurrency", 16, "concurrent clients of the flood")
	goodConc := fs.Int("good", 4, "concurrent clients of the good token")
	phase := fs.Duration("phase", 15*time.Second, "length of each flood phase")
	maxRequests := fs.Int64("max-requests", 1_000_000, "upper bound on the requests of each phase")
	slow := fs.Int("slow", 32, "slow-header and as many slow-body connections of the slow-client phase")
	return func(ctx context.Context, e *env) error {
		for _, ip := range []string{badTokenSource, malformedSource, slowSource, slowGoodSource} {
			if err := checkSource(ip); err != nil {
				return err
			}
		}
		const dbName = "fleetapi_ops_flood"
		dbURL, err := e.freshDatabase(ctx, dbName)
		if err != nil {
			return err
		}
		good, err := e.createToken(ctx, dbURL, "acme", "ops-flood-good", 100_000_000)
		if err != nil {
			return err
		}
		valid, err := e.createToken(ctx, dbURL, "globex", "ops-flood-malformed", 0) // the server's default limit
		if err != nil {
			return err
		}
		// The in-process limiter: with FLEET_REDIS_URL the guard works the
		// same, shared by every replica, but its per-address keys
		// ("authfail:127.0.0.1") would be shared with any other fleetapi on
		// this machine that uses the same Redis database.
		r, err := e.startReplica(ctx, "replica", map[string]string{"FLEET_DATABASE_URL": dbURL})
		if err != nil {
			return err
		}
		f := &flood{e: e, r: r, c: &checks{e: e}, adminURL: e.common.adminURL, db: dbName, good: good, valid: valid,
			bad: *bad, goodConc: *goodConc, phase: *phase, max: *maxRequests, slow: *slow,
			ops: newClient(2, "")}
		return f.run(ctx)
	}
}

// checkSource makes sure connections can leave from the loopback address ip.
func checkSource(ip string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		return fmt.Errorf("cannot send from %s (needs the whole 127.0.0.0/8 on lo, as Linux has): %w", ip, err)
	}
	c.Close()
	return nil
}

// flood is the flood run's state: the replica, the tokens and the flags.
type flood struct {
	e            *env
	r            *replica
	c            *checks
	adminURL, db string
	good, valid  token
	bad          int
	goodConc     int
	phase        time.Duration
	max          int64
	slow         int
	// ops scrapes /metrics.
	ops *http.Client
}

// storm sends kinds round-robin from source with conc clients for d.
func (f *flood) storm(ctx context.Context, source string, conc int, d time.Duration, kinds []kind, rec *stats.Recorder) {
	client := newClient(conc, source)
	stats.Drive(ctx, bounds(conc, d, f.max), func(ctx context.Context, _ int, n int64) {
		k := kinds[(n+1)%int64(len(kinds))]
		res := send(ctx, client, f.r.base(), k.build())
		rec.Add(k.name, res.Outcome, res.ok(k.want...))
	})
}

// goodClient reads with the good token from source.
func (f *flood) goodClient(ctx context.Context, source string, d time.Duration, rec *stats.Recorder) {
	client := newClient(f.goodConc, source)
	paths := []string{"/api/v2/services?per_page=20", "/api/v2/me", "/api/v2/services/due"}
	stats.Drive(ctx, bounds(f.goodConc, d, f.max), func(ctx context.Context, _ int, n int64) {
		res := send(ctx, client, f.r.base(), call{method: http.MethodGet, path: paths[(n+1)%int64(len(paths))], token: f.good.Secret})
		rec.Add("good token ("+source+")", res.Outcome, res.ok(http.StatusOK))
	})
}

// work is the database work of a phase: SQL statements counted by the
// replica and transactions counted by PostgreSQL.
type work struct{ queries, xacts float64 }

// measure reads the database work so far (it waits for PostgreSQL's
// statistics: about 11 s).
func (f *flood) measure(ctx context.Context) work {
	q, err := queryCount(ctx, f.ops, f.r.base())
	if err != nil {
		f.e.logf("scrape /metrics: %v", err)
	}
	x, err := dbTransactions(ctx, f.adminURL, f.db)
	if err != nil {
		f.e.logf("pg_stat_database: %v", err)
	}
	return work{q, float64(x)}
}

// run runs the six phases in order (stopping when ctx ends) and returns
// the failed checks.
func (f *flood) run(ctx context.Context) error {
	alone, w := f.phaseAlone(ctx, f.measure(ctx))
	if ctx.Err() == nil {
		w = f.phaseBadTokens(ctx, w)
	}
	if ctx.Err() == nil {
		f.phaseMalformed(ctx, w)
	}
	if ctx.Err() == nil {
		f.phaseTogether(ctx, alone)
	}
	if ctx.Err() == nil {
		f.phaseSameAddress(ctx)
	}
	if ctx.Err() == nil {
		f.phaseSlow(ctx)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return f.c.err()
}
