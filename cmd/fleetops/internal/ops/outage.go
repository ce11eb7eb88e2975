package ops

import (
	"context"
	"flag"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// outageRun: one replica on a private PostgreSQL cluster (never the shared
// server), load with reads and idempotent passenger creates, the cluster
// stopped and started again in the middle. It counts answers per second,
// checks the 503s and the recovery, and then checks in the database that
// every create is there exactly once.
func outageRun(fs *flag.FlagSet) func(context.Context, *env) error {
	conc := fs.Int("concurrency", 16, "concurrent clients")
	before := fs.Duration("before", 15*time.Second, "load before the database stops")
	down := fs.Duration("down", 20*time.Second, "how long the database stays stopped")
	after := fs.Duration("after", 25*time.Second, "load after the database is started again")
	maxRequests := fs.Int64("max-requests", 500_000, "upper bound on the logical requests of the run")
	freeze := fs.Bool("freeze", false, "freeze the database (SIGSTOP to its processes, then SIGCONT) instead of stopping it: a server that hangs instead of refusing")
	return func(ctx context.Context, e *env) error {
		pg, tok, err := demoCluster(ctx, e, "acme", "ops-outage")
		if err != nil {
			return err
		}
		r, err := e.startReplica(ctx, "replica", map[string]string{"FLEET_DATABASE_URL": pg.server.URL})
		if err != nil {
			return err
		}
		o := &outage{e: e, r: r, tok: tok, client: newClient(*conc, ""), rec: stats.NewRecorder(), freeze: *freeze,
			runID: strconv.FormatInt(time.Now().UnixNano()%1e9, 36), keys: map[string]*keyState{}}
		total := *before + *down + *after
		e.logf("load: %d clients (%d creating passengers) for %s; database stopped at %s for %s", *conc, max(1, *conc/4), total, *before, *down)
		var wg sync.WaitGroup
		probeCtx, stopProbe := context.WithCancel(ctx)
		wg.Add(2)
		go func() { defer wg.Done(); o.probe(probeCtx) }()
		go func() { defer wg.Done(); o.cycleDatabase(ctx, pg, *before, *down) }()
		// A quarter of the clients create passengers (retrying those that
		// failed, with the same key), the others read.
		creators := max(1, *conc/4)
		stats.Drive(ctx, bounds(*conc, total, *maxRequests), func(ctx context.Context, w int, n int64) {
			i := n + 1
			if w < creators {
				o.create(ctx, i)
				return
			}
			o.read(ctx, i)
		})
		stopProbe()
		wg.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return o.report(ctx, pg)
	}
}

// pendingCreate is a create waiting to be sent again from at on.
type pendingCreate struct {
	key string
	at  time.Time
}

// keyState is what happened to one logical passenger create.
type keyState struct {
	body         []byte
	attempts     int
	failures     map[string]int // 503, other statuses, transport errors
	id           int64          // passenger_id of the 201
	created      bool
	createdOnTry int
}

// outage is the outage run's state: the replica, the load's figures
// and what happened to the database, all times since the load began.
type outage struct {
	e      *env
	r      *replica
	tok    token
	client *http.Client
	rec    *stats.Recorder
	runID  string
	freeze bool

	mu                    sync.Mutex
	keys                  map[string]*keyState
	pending               []pendingCreate
	lat503                []time.Duration
	noRetryAfter          int
	retryAfter            map[string]int
	stoppedAt, startedAt  time.Duration // since the recorder started
	first503, last503     time.Duration
	firstOKAfterRestart   time.Duration
	downFor, restartTook  time.Duration
	stopTook              time.Duration
	stopErr, restartError error
}

// since is the time since the load began.
func (o *outage) since() time.Duration { return o.rec.Elapsed() }

// probe asks /readyz and /healthz once a second.
func (o *outage) probe(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for _, p := range []string{"/readyz", "/healthz"} {
			res := send(ctx, o.client, o.r.base(), call{method: http.MethodGet, path: p})
			if ctx.Err() != nil {
				return
			}
			label := "error"
			if res.Err == nil {
				label = strconv.Itoa(res.Status)
			}
			o.rec.Mark(p + " " + label)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cycleDatabase stops the cluster after before and starts it again after
// down.
func (o *outage) cycleDatabase(ctx context.Context, pg *cluster, before, down time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(before):
	}
	what := "stopping the database (pg_ctl stop -m fast)"
	if o.freeze {
		what = "freezing the database (SIGSTOP to the postmaster and its backends)"
	}
	o.e.logf("%s", what)
	o.mu.Lock()
	o.stoppedAt = o.since()
	o.mu.Unlock()
	var err error
	if o.freeze {
		err = pg.signal(syscall.SIGSTOP)
	} else {
		err = pg.stop()
	}
	o.mu.Lock()
	o.stopTook, o.stopErr = o.since()-o.stoppedAt, err
	o.mu.Unlock()
	select {
	case <-ctx.Done():
		return
	case <-time.After(down):
	}
	t := time.Now()
	if o.freeze {
		o.e.logf("thawing the database (SIGCONT)")
		err = pg.signal(syscall.SIGCONT)
	} else {
		o.e.logf("starting the database again")
		err = pg.start(ctx, o.e)
	}
	o.mu.Lock()
	o.startedAt, o.restartTook, o.restartError = o.since(), time.Since(t), err
	o.downFor = o.startedAt - o.stoppedAt
	o.mu.Unlock()
	o.e.logf("database back after %s (the restart or thaw took %s)", o.downFor.Round(100*time.Millisecond), o.restartTook.Round(time.Millisecond))
}
