package ops

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// failoverPhases name the four phases of the failover run.
var failoverPhases = [4]string{"all up", "primary failed", "failed over", "old primary back"}

// failoverHows are the ways the failover run makes the primary fail.
var failoverHows = []string{"postmaster", "kill", "freeze"}

// failoverRun: a private HA cluster (docs/design.md §13: etcd, Patroni
// with two PostgreSQL nodes in synchronous replication, HAProxy), a
// private Redis and two replicas configured with HAProxy's primary and
// replica addresses only, under creates and reads for four phases of
// --step each: all up; the primary failed at the start of the second
// (--how: its postmaster killed, the node killed, or the node frozen);
// the third after the fail-over; the old primary brought back (restarted
// or thawed) at the start of the fourth, to rejoin as a standby. Every
// create carries an Idempotency-Key and is retried until answered 201;
// at the end every acknowledged create must be on the new primary, once.
func failoverRun(fs *flag.FlagSet) func(context.Context, *env) error {
	conc := fs.Int("concurrency", 8, "concurrent clients (half create passengers, half read)")
	step := fs.Duration("step", 20*time.Second, "length of each of the four phases")
	how := "kill"
	fs.Func("how", "how the primary fails: postmaster (kill -9 of its PostgreSQL), kill (kill -9 of the node: Patroni and PostgreSQL), freeze (SIGSTOP of the node) (default kill)", func(v string) error {
		if !slices.Contains(failoverHows, v) {
			return fmt.Errorf("want one of %s", strings.Join(failoverHows, ", "))
		}
		how = v
		return nil
	})
	maxRequests := fs.Int64("max-requests", 1_000_000, "upper bound on the requests of the run")
	return func(ctx context.Context, e *env) error {
		if *conc < 2 {
			return fmt.Errorf("--concurrency %d: want at least 2 (a creator and a reader)", *conc)
		}
		c, err := pgserver.StartHACluster(ctx, e.work, pgserver.HAOptions{})
		if errors.Is(err, pgserver.ErrHANotInstalled) {
			return fmt.Errorf("%w (apt-get install patroni etcd-server haproxy pgbackrest)", err)
		}
		if err != nil {
			return err
		}
		e.onClose(func() { c.Stop(); e.logf("stopped the HA cluster") })
		e.logf("HA cluster in %s: HAProxy primary port %d, replica port %d", c.Dir, c.PrimaryPort, c.ReplicaPort)
		if err := storage.EnsureDatabase(ctx, c.URL); err != nil {
			return err
		}
		if err := e.importDemo(ctx, c.URL); err != nil {
			return err
		}
		tok, err := e.createToken(ctx, c.URL, "acme", "ops-failover", 100_000_000)
		if err != nil {
			return err
		}
		rd, err := e.startPrivateRedis(ctx, "")
		if err != nil {
			return err
		}
		vars := map[string]string{"FLEET_DATABASE_URL": c.URL, "FLEET_DATABASE_READ_URLS": c.ReplicaURL,
			"FLEET_REDIS_URL": "redis://" + rd.addr + "/0"}
		reps, err := e.startReplicas(ctx, vars, "replica-a", "replica-b")
		if err != nil {
			return err
		}
		f := &failoverLoad{e: e, c: c, how: how, reps: reps, tok: tok, client: newClient(*conc, ""),
			rec: stats.NewRecorder(), acked: map[string]int64{}, old: c.Leader()}
		if f.old < 0 {
			return errors.New("the HA cluster has no leader")
		}
		e.logf("load: %d clients (%d creating passengers, each create retried with its Idempotency-Key until 201; %d reading) at replicas a and b for 4 × %s; the primary (node %d) fails (%s) at %s, comes back at %s",
			*conc, *conc/2, *conc-*conc/2, *step, f.old, how, *step, 3**step)
		runCtx, cancel := context.WithTimeout(ctx, 4**step)
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); f.cycle(runCtx, *step) }()
		for w := range *conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if w%2 == 0 {
					f.creates(runCtx, w, *maxRequests)
				} else {
					f.reads(runCtx, w, *maxRequests)
				}
			}()
		}
		wg.Wait()
		f.mark(4)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := c.WaitHealthy(ctx, 2*time.Minute); err != nil {
			f.cycErr = errors.Join(f.cycErr, err)
		}
		return f.report(ctx)
	}
}

// failoverLoad is the failover run's state.
type failoverLoad struct {
	e      *env
	c      *pgserver.HACluster
	how    string
	old    int // the node that was the primary
	reps   []*replica
	tok    token
	client *http.Client
	rec    *stats.Recorder

	mu           sync.Mutex
	phase        int
	requests     int64
	lats         [4][]time.Duration
	status       [4]map[int]int
	errs         [4]int
	no503Retry   int              // 503 answers without Retry-After or SERVICE_UNAVAILABLE
	marks        [5]time.Duration // phase starts, and the end, since the load began
	failedAt     time.Time        // when the primary failed
	firstAck     time.Time        // the first 201 of a create sent after that
	newLeader    time.Time        // when another node answered 200 on Patroni's /primary
	acked        map[string]int64 // Idempotency-Key → passenger id of its 201
	retried      int              // keys answered 201 after more than one attempt
	unanswered   int              // keys never answered 201 before the run ended
	readsWithout int              // reads answered 200 while no write was
	cycErr       error
}

// mark starts phase i (4: the end).
func (f *failoverLoad) mark(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.marks[i] = f.rec.Elapsed()
	if i < 4 {
		f.phase = i
	}
}

// take counts one more request against the run's bound.
func (f *failoverLoad) take(max int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	return f.requests <= max
}

// record counts one answer in the current phase.
func (f *failoverLoad) record(name string, res result) {
	f.rec.Add(name, res.Outcome, res.ok(http.StatusOK, http.StatusCreated))
	f.rec.Mark(stats.Class(res.Outcome))
	f.mu.Lock()
	defer f.mu.Unlock()
	ph := f.phase
	if f.status[ph] == nil {
		f.status[ph] = map[int]int{}
	}
	if res.Err != nil {
		f.errs[ph]++
		return
	}
	f.status[ph][res.Status]++
	f.lats[ph] = append(f.lats[ph], res.Latency)
	if res.Status == http.StatusServiceUnavailable && (res.header.Get("Retry-After") == "" || errorCode(res.body) != "SERVICE_UNAVAILABLE") {
		f.no503Retry++
	}
}

// creates sends passenger creates, each retried with its Idempotency-Key
// (every 100 ms) until answered 201; a key being retried when the run
// ends is retried on until answered, for at most a minute.
func (f *failoverLoad) creates(ctx context.Context, w int, max int64) {
	for seq := 0; ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("ops-fo-%s-%d-%d", f.how, w, seq)
		body, _ := json.Marshal(map[string]any{"passenger_name": key})
		k := call{method: http.MethodPost, path: "/api/v2/passengers", token: f.tok.Secret, body: body, header: http.Header{"Idempotency-Key": {key}}}
		sendCtx := ctx
		for attempt := 0; ; attempt++ {
			if !f.take(max) {
				return
			}
			sent := time.Now()
			res := send(sendCtx, f.client, f.reps[(w+attempt)%2].base(), k)
			if res.Err != nil && ctx.Err() != nil && attempt == 0 {
				return // the run ended during a first attempt
			}
			f.record("POST /passengers", res)
			if res.ok(http.StatusCreated) {
				var p struct {
					Data struct {
						ID int64 `json:"passenger_id"`
					} `json:"data"`
				}
				_ = json.Unmarshal(res.body, &p)
				f.mu.Lock()
				f.acked[key] = p.Data.ID
				if attempt > 0 {
					f.retried++
				}
				if !f.failedAt.IsZero() && f.firstAck.IsZero() && sent.After(f.failedAt) {
					f.firstAck = time.Now()
				}
				f.mu.Unlock()
				break
			}
			if ctx.Err() != nil && sendCtx == ctx {
				// The run ended while this key was being retried: go on
				// on a context of its own, so that it gets its row.
				var cancel context.CancelFunc
				sendCtx, cancel = context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
			}
			if sendCtx.Err() != nil {
				f.mu.Lock()
				f.unanswered++
				f.mu.Unlock()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// failoverReads are the reads of the load, in turn.
var failoverReads = []string{"/api/v2/services?per_page=20", "/api/v2/events", "/api/v2/me", "/api/v2/reports", "/api/v2/objects"}

// reads sends reads to both replicas in turn.
func (f *failoverLoad) reads(ctx context.Context, w int, max int64) {
	for n := 0; ctx.Err() == nil && f.take(max); n++ {
		path := failoverReads[n%len(failoverReads)]
		res := send(ctx, f.client, f.reps[(w+n)%2].base(), call{method: http.MethodGet, path: path, token: f.tok.Secret})
		if ctx.Err() != nil {
			return
		}
		f.record("GET", res)
		if res.ok(http.StatusOK) {
			f.mu.Lock()
			if !f.failedAt.IsZero() && f.firstAck.IsZero() {
				f.readsWithout++
			}
			f.mu.Unlock()
		}
	}
}

// cycle fails the primary after one step, watches for the new leader, and
// brings the old primary back after three.
func (f *failoverLoad) cycle(ctx context.Context, step time.Duration) {
	f.mark(0)
	fail := map[string]func(int) error{"postmaster": f.c.KillPostgres, "kill": f.c.Kill, "freeze": f.c.Freeze}[f.how]
	for i := 1; i <= 3; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(step):
		}
		f.mark(i)
		var err error
		switch i {
		case 1:
			f.e.logf("the primary fails: %s of node %d", f.how, f.old)
			err = fail(f.old)
			// The failure is complete once the signals are sent: a create
			// sent before then may still have been committed by the old
			// primary.
			f.mu.Lock()
			f.failedAt = time.Now()
			f.mu.Unlock()
			go f.watchLeader(ctx)
		case 3:
			switch f.how {
			case "kill":
				f.e.logf("restarting node %d (Patroni), to rejoin as a standby", f.old)
				err = f.c.Restart(f.old)
			case "freeze":
				f.e.logf("thawing node %d, to rejoin as a standby", f.old)
				err = f.c.Thaw(f.old)
			default:
				f.e.logf("node %d's Patroni restarts its PostgreSQL as a standby by itself", f.old)
			}
		}
		if err != nil {
			f.mu.Lock()
			f.cycErr = errors.Join(f.cycErr, err)
			f.mu.Unlock()
		}
	}
}

// watchLeader records when a node other than the old primary answers 200
// on Patroni's /primary.
func (f *failoverLoad) watchLeader(ctx context.Context) {
	for ctx.Err() == nil {
		if l := f.c.Leader(); l >= 0 && l != f.old {
			f.mu.Lock()
			f.newLeader = time.Now()
			f.mu.Unlock()
			f.e.logf("node %d is the primary", l)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stored reads, on the new primary, the passengers of the run's creates:
// name → the rows stored for it.
func (f *failoverLoad) stored(ctx context.Context) (map[string]storedRows, error) {
	db := storage.Open(f.c.URL, storage.Options{MaxOpenConns: 1})
	defer db.Close()
	return storedPassengers(ctx, db, "passenger_name", "ops-fo-"+f.how+"-")
}

// report prints the figures per phase and checks them.
func (f *failoverLoad) report(ctx context.Context) error {
	e, c := f.e, &checks{e: f.e}
	stored, err := f.stored(ctx)
	c.expect(err == nil, "the run's passengers read on the new primary (%v)", err)
	lost, dup := 0, 0
	for key, id := range f.acked {
		if s, ok := stored[key]; !ok || s.id != id {
			lost++
		}
	}
	for _, s := range stored {
		if s.n != 1 {
			dup++
		}
	}
	since := func(t time.Time) string {
		if t.IsZero() || f.failedAt.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.1f", t.Sub(f.failedAt).Seconds())
	}
	e.printf("\nfailover (%s): two replicas on a Patroni cluster (synchronous standby) behind HAProxy, Redis; primary failed at %.1f s, brought back at %.1f s\n",
		f.how, f.marks[1].Seconds(), f.marks[3].Seconds())
	f.rec.Table(e.out, f.marks[4])
	e.printf("per second (answers of both replicas):\n")
	f.rec.Timeline(e.out, []string{"2xx", "503", "4xx", "5xx", "error"}, 2, func(from, to int) string {
		for i, what := range []string{"", "← primary failed", "", "← old primary back"} {
			if at := int(f.marks[i].Seconds()); what != "" && from <= at && at <= to {
				return what
			}
		}
		return ""
	})
	e.printf("%-18s %7s %9s %8s %8s %8s %6s %6s %7s  %s\n", "phase", "seconds", "requests", "req/s", "p50 ms", "p99 ms", "503", "5xx", "errors", "statuses")
	other5xx, errs := 0, 0
	for i := range 4 {
		d := f.marks[i+1] - f.marks[i]
		n := len(f.lats[i])
		l := stats.PercentilesOf(f.lats[i])
		s503 := f.status[i][http.StatusServiceUnavailable]
		s5xx := stats.ServerErrors(f.status[i]) - s503
		e.printf("%-18s %7.1f %9d %8.0f %8s %8s %6d %6d %7d  %s\n", failoverPhases[i], d.Seconds(), n, stats.Rate(int64(n), d),
			ms(l.P50), ms(l.P99), s503, s5xx, f.errs[i], stats.Counts(f.status[i], strconv.Itoa))
		other5xx += s5xx
		errs += f.errs[i]
	}
	rto := f.firstAck.Sub(f.failedAt)
	e.printf("  seconds without writes (the failure to the first 201 of a create sent after it): %s; without a primary (to Patroni's /primary 200 on the other node): %s\n",
		since(f.firstAck), since(f.newLeader))
	e.printf("  creates acknowledged (201): %d, of which %d after retries with their Idempotency-Key; acknowledged writes lost: %d; keys with ≠ 1 row: %d; keys never answered 201: %d\n",
		len(f.acked), f.retried, lost, dup, f.unanswered)
	e.printf("  reads answered 200 while writes were not: %d\n", f.readsWithout)
	c.expect(f.cycErr == nil, "the primary failed and came back, and the cluster is healthy again (%v)", f.cycErr)
	c.expect(!f.firstAck.IsZero(), "writes answered again after the failure, without restarting fleetapi")
	c.expect(!f.firstAck.IsZero() && rto <= 15*time.Second, "writes answered again within 15 s (%s s)", since(f.firstAck))
	c.expect(lost == 0, "no acknowledged write lost (%d)", lost)
	c.expect(dup == 0 && f.unanswered == 0, "every key has exactly one row (%d with ≠ 1, %d unanswered)", dup, f.unanswered)
	c.expect(other5xx == 0 && errs == 0, "no 5xx but 503 and no failed request (%d 5xx, %d errors)", other5xx, errs)
	c.expect(f.no503Retry == 0, "every 503 is SERVICE_UNAVAILABLE with Retry-After (%d not)", f.no503Retry)
	c.expect(f.readsWithout > 0, "reads answered while there was no primary (%d)", f.readsWithout)
	c.expect(f.c.Role(f.old) == "replica", "the old primary is back as a standby (%q)", f.c.Role(f.old))
	return c.err()
}
