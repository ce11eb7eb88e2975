package ops

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// standbyPhases name the four phases of the standby run.
var standbyPhases = [4]string{"all up", "standby stopped", "Redis stopped too", "standby back"}

// standbyRun: one private primary, a streaming standby of it, a private
// Redis and two replicas reading through the standby
// (FLEET_DATABASE_READ_URLS), under load for four phases of --step each:
// all up; the standby stopped with pg_ctl stop -m immediate; the Redis
// stopped too; the standby started again (Redis still down). It records
// throughput, latency, statuses and the read routing (fleet_db_reads_total
// scraped from both replicas) per phase, and checks that no request failed.
func standbyRun(fs *flag.FlagSet) func(context.Context, *env) error {
	conc := fs.Int("concurrency", 16, "concurrent clients")
	step := fs.Duration("step", 10*time.Second, "length of each of the four phases")
	maxLag := fs.Duration("max-lag", 5*time.Second, "FLEET_REPLICA_MAX_LAG of the replicas")
	maxRequests := fs.Int64("max-requests", 1_000_000, "upper bound on the requests of the run")
	return func(ctx context.Context, e *env) error {
		pg, tok, err := demoCluster(ctx, e, "fleetco", "ops-standby")
		if err != nil {
			return err
		}
		sb, err := e.startStandby(ctx, pg)
		if err != nil {
			return err
		}
		rd, err := e.startPrivateRedis(ctx, "")
		if err != nil {
			return err
		}
		vars := map[string]string{"FLEET_DATABASE_URL": pg.server.URL, "FLEET_DATABASE_READ_URLS": sb.URL,
			"FLEET_REPLICA_MAX_LAG": maxLag.String(), "FLEET_REDIS_URL": "redis://" + rd.addr + "/0"}
		reps, err := e.startReplicas(ctx, vars, "replica-a", "replica-b")
		if err != nil {
			return err
		}
		s := &standbyLoad{e: e, reps: reps, tok: tok, client: newClient(*conc, ""), rec: stats.NewRecorder()}
		e.logf("load: %d clients at replicas a and b for 4 × %s (1 request in 8 a passenger create); standby stopped at %s, Redis at %s, standby started again at %s",
			*conc, *step, *step, 2**step, 3**step)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); s.cycle(ctx, sb, rd, *step) }()
		s.routing(ctx, 0)
		stats.Drive(ctx, bounds(*conc, 4**step, *maxRequests), func(ctx context.Context, _ int, n int64) { s.request(ctx, n) })
		s.mark(4)
		wg.Wait()
		s.routing(ctx, 4)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.report()
	}
}

// startStandby starts a streaming standby of the run's private cluster in
// the work folder, stopped when the run ends.
func (e *env) startStandby(ctx context.Context, pg *cluster) (*pgserver.Standby, error) {
	sb, err := pgserver.StartStandby(ctx, pg.server, filepath.Join(e.work, "pg-standby"), e.out)
	if err != nil {
		return nil, err
	}
	e.onClose(func() {
		if err := sb.Stop("fast"); err == nil {
			e.logf("stopped the standby")
		}
	})
	e.logf("streaming standby of the private cluster (unix socket only)")
	return sb, nil
}

// standbyLoad is the standby run's state: the load's figures per phase and
// the read routing scraped at each phase's start.
type standbyLoad struct {
	e      *env
	reps   []*replica
	tok    token
	client *http.Client
	rec    *stats.Recorder
	phase  atomic.Int32

	mu      sync.Mutex
	lats    [4][]time.Duration
	status  [4]map[int]int
	errs    [4]int
	marks   [5]time.Duration // phase starts, and the end, since the load began
	reads   [5]readRouting   // summed over the replicas at each mark
	cycErr  error
	created int
}

// readRouting is fleet_db_reads_total by target and
// fleet_db_read_retries_total, summed over the replicas.
type readRouting struct {
	primary, replica, retries float64
}

// sub is r minus an earlier reading.
func (r readRouting) sub(o readRouting) readRouting {
	return readRouting{r.primary - o.primary, r.replica - o.replica, r.retries - o.retries}
}

// replicaShare is the share of reads served by the replica.
func (r readRouting) replicaShare() float64 {
	if r.primary+r.replica == 0 {
		return 0
	}
	return r.replica / (r.primary + r.replica)
}

// standbyPaths are the reads of the load, in turn.
var standbyPaths = []string{"/api/v2/services?per_page=50", "/api/v2/events", "/api/v2/services/due", "/api/v2/reports",
	"/api/v2/events/1", "/api/v2/objects", "/api/v2/me"}

// request sends the n-th request to a replica in turn: a passenger create
// (a write, on the primary) one time in eight, else a read.
func (s *standbyLoad) request(ctx context.Context, n int64) {
	r := s.reps[n%2]
	ph := s.phase.Load()
	k := call{method: http.MethodGet, path: standbyPaths[(n/2)%int64(len(standbyPaths))], token: s.tok.Secret}
	name := "GET"
	if n%8 == 7 {
		key := "standby-" + strconv.FormatInt(n, 10)
		body, _ := json.Marshal(map[string]any{"passenger_name": "Standby " + key, "passenger_assign_id": key})
		k = call{method: http.MethodPost, path: "/api/v2/passengers", token: s.tok.Secret, body: body, header: http.Header{"Idempotency-Key": {key}}}
		name = "POST /passengers"
	}
	res := send(ctx, s.client, r.base(), k)
	if ctx.Err() != nil {
		return
	}
	s.rec.Add(name, res.Outcome, res.ok(http.StatusOK, http.StatusCreated))
	s.rec.Mark(stats.Class(res.Outcome))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status[ph] == nil {
		s.status[ph] = map[int]int{}
	}
	if res.Err != nil {
		s.errs[ph]++
		return
	}
	if res.Status == http.StatusCreated {
		s.created++
	}
	s.status[ph][res.Status]++
	s.lats[ph] = append(s.lats[ph], res.Latency)
}

// mark starts phase i (4: the end) and reads the routing counters.
func (s *standbyLoad) mark(i int) {
	s.mu.Lock()
	s.marks[i] = s.rec.Elapsed()
	s.mu.Unlock()
	if i < 4 {
		s.phase.Store(int32(i))
	}
}

// routing scrapes fleet_db_reads_total and fleet_db_read_retries_total
// from both replicas into reads[i].
func (s *standbyLoad) routing(ctx context.Context, i int) {
	var r readRouting
	for _, rep := range s.reps {
		samples, err := scrape(ctx, s.client, rep.base())
		if err != nil {
			s.e.logf("scrape %s: %v", rep.name, err)
			continue
		}
		r.primary += sumOf(samples, "fleet_db_reads_total", map[string]string{"target": storage.TargetPrimary})
		r.replica += sumOf(samples, "fleet_db_reads_total", map[string]string{"target": storage.TargetReplica})
		r.retries += sumOf(samples, "fleet_db_read_retries_total", nil)
	}
	s.mu.Lock()
	s.reads[i] = r
	s.mu.Unlock()
}

// cycle stops the standby after one step, the Redis after two, and starts
// the standby again after three, reading the routing at each change.
func (s *standbyLoad) cycle(ctx context.Context, sb *pgserver.Standby, rd *redisProcess, step time.Duration) {
	s.mark(0)
	for i := 1; i <= 3; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(step):
		}
		s.routing(ctx, i)
		s.mark(i)
		var err error
		switch i {
		case 1:
			s.e.logf("stopping the standby (pg_ctl stop -m immediate)")
			err = sb.Stop("immediate")
		case 2:
			s.e.logf("stopping the Redis")
			rd.stop()
		case 3:
			s.e.logf("starting the standby again")
			err = sb.Start(ctx)
		}
		if err != nil {
			s.mu.Lock()
			s.cycErr = err
			s.mu.Unlock()
		}
	}
}

// report prints the figures per phase and checks them.
func (s *standbyLoad) report() error {
	e, c := s.e, &checks{e: s.e}
	elapsed := s.marks[4]
	e.printf("\nstandby: two replicas, a primary and its streaming standby, Redis; standby stopped at %.1f s, Redis at %.1f s, standby started at %.1f s\n",
		s.marks[1].Seconds(), s.marks[2].Seconds(), s.marks[3].Seconds())
	s.rec.Table(e.out, elapsed)
	e.printf("per second (answers of both replicas):\n")
	s.rec.Timeline(e.out, []string{"2xx", "429", "503", "4xx", "5xx", "error"}, 2, func(from, to int) string {
		for i, what := range []string{"", "← standby stopped", "← Redis stopped", "← standby started"} {
			if at := int(s.marks[i].Seconds()); i > 0 && from <= at && at <= to {
				return what
			}
		}
		return ""
	})
	e.printf("%-18s %7s %9s %8s %8s %8s %9s %9s %8s  %s\n", "phase", "seconds", "requests", "req/s", "p50 ms", "p99 ms", "replica", "primary", "retried", "statuses")
	total5xx, totalErrs := 0, 0
	var rt [4]readRouting
	for i := range 4 {
		d := s.marks[i+1] - s.marks[i]
		n := len(s.lats[i])
		l := stats.PercentilesOf(s.lats[i])
		rt[i] = s.reads[i+1].sub(s.reads[i])
		e.printf("%-18s %7.1f %9d %8.0f %8s %8s %9.0f %9.0f %8.0f  %s errors %d\n", standbyPhases[i], d.Seconds(), n, stats.Rate(int64(n), d),
			ms(l.P50), ms(l.P99), rt[i].replica, rt[i].primary, rt[i].retries, stats.Counts(s.status[i], strconv.Itoa), s.errs[i])
		total5xx += stats.ServerErrors(s.status[i])
		totalErrs += s.errs[i]
	}
	e.printf("  reads = fleet_db_reads_total{target} summed over both replicas; retried = fleet_db_read_retries_total (a read that failed on the standby and ran again on the primary)\n")
	e.printf("  passenger creates answered 201: %d\n", s.created)
	c.expect(s.cycErr == nil, "the standby and the Redis stopped and started (%v)", s.cycErr)
	c.expect(total5xx == 0 && totalErrs == 0, "no 5xx and no failed request in any phase (%d 5xx, %d errors)", total5xx, totalErrs)
	c.expect(rt[0].replicaShare() >= 0.99, "all up: the reads go to the standby (%.1f%%)", 100*rt[0].replicaShare())
	c.expect(rt[2].replica == 0 && rt[2].primary > 0, "standby and Redis down: every read on the primary (%.0f on the replica)", rt[2].replica)
	c.expect(rt[3].replica > 0, "standby back: reads return to it (%.0f)", rt[3].replica)
	for _, r := range s.reps {
		for _, l := range r.logLines("request failed") {
			c.expect(false, "%s: a request failed with %v: %v", r.name, l["code"], l["error"])
		}
	}
	return c.err()
}
