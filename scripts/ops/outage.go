package main

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
		pg, err := startCluster(ctx, e)
		if err != nil {
			return err
		}
		if err := e.importDemo(ctx, pg.server.URL); err != nil {
			return err
		}
		tok, err := e.createToken(ctx, pg.server.URL, "acme", "ops-outage", 100_000_000)
		if err != nil {
			return err
		}
		r, err := e.startReplica(ctx, "replica", map[string]string{"FLEET_DATABASE_URL": pg.server.URL})
		if err != nil {
			return err
		}
		o := &outage{e: e, r: r, tok: tok, client: newClient(*conc, ""), rec: newRecorder(), freeze: *freeze,
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
		var seq atomic.Int64
		drive(ctx, *conc, total, *maxRequests, func(ctx context.Context, w int) {
			i := seq.Add(1)
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

type outage struct {
	e      *env
	r      *replica
	tok    token
	client *http.Client
	rec    *recorder
	runID  string
	freeze bool

	mu                    sync.Mutex
	keys                  map[string]*keyState
	pending               []pendingCreate
	lat503                []time.Duration
	noRetryAfter          int
	retryAfter            map[string]int
	stoppedAt, startedAt  time.Duration // since rec.start
	first503, last503     time.Duration
	firstOKAfterRestart   time.Duration
	downFor, restartTook  time.Duration
	stopTook              time.Duration
	stopErr, restartError error
}

func (o *outage) since() time.Duration { return time.Since(o.rec.start) }

// note records the 503 figures of res.
func (o *outage) note(res result) {
	if res.err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.since()
	switch {
	case res.status == http.StatusServiceUnavailable:
		o.lat503 = append(o.lat503, res.latency)
		if o.first503 == 0 {
			o.first503 = now
		}
		o.last503 = now
		ra := res.header.Get("Retry-After")
		if n, err := strconv.Atoi(ra); err != nil || n < 1 {
			o.noRetryAfter++
		}
		if o.retryAfter == nil {
			o.retryAfter = map[string]int{}
		}
		o.retryAfter[ra]++
	case res.status < 300 && o.startedAt != 0 && o.firstOKAfterRestart == 0:
		o.firstOKAfterRestart = now
	}
}

var readPaths = []string{"/api/v2/services?per_page=50", "/api/v2/me", "/api/v2/services/due", "/api/v2/events"}

func (o *outage) read(ctx context.Context, i int64) {
	path := readPaths[i%int64(len(readPaths))]
	res := send(ctx, o.client, o.r.base(), call{method: http.MethodGet, path: path, token: o.tok.Secret})
	name := "GET " + strings.TrimPrefix(strings.SplitN(path, "?", 2)[0], "/api/v2")
	o.rec.add(name, res, res.err == nil && (res.status == http.StatusOK || res.status == http.StatusServiceUnavailable))
	o.note(res)
}

// maxPending bounds the creates waiting for a retry.
const maxPending = 500

// create makes one attempt of a passenger create with an Idempotency-Key:
// a create due for a retry when there is one, else a new one (while fewer
// than maxPending wait). A create answered 503 or lost to a transport error
// waits Retry-After (at most a second) and is sent again, same key and
// body, until it is created; what is still waiting when the run ends is
// retried by report.
func (o *outage) create(ctx context.Context, i int64) {
	o.mu.Lock()
	var key string
	now := time.Now()
	for j, p := range o.pending {
		if !p.at.After(now) {
			key = p.key
			o.pending = slices.Delete(o.pending, j, j+1)
			break
		}
	}
	if key == "" && len(o.pending) >= maxPending {
		o.mu.Unlock()
		select { // every create waits for a retry: pause like a client would
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		return
	}
	if key == "" {
		key = "outage-" + o.runID + "-" + strconv.FormatInt(i, 10)
		body, _ := json.Marshal(map[string]any{"passenger_name": "Outage " + key, "passenger_assign_id": key})
		o.keys[key] = &keyState{body: body, failures: map[string]int{}}
	}
	st := o.keys[key]
	o.mu.Unlock()

	res := o.post(ctx, key, st.body)
	o.rec.add("POST /passengers", res, res.err == nil && (res.status == http.StatusCreated || res.status == http.StatusServiceUnavailable))
	o.note(res)
	o.mu.Lock()
	defer o.mu.Unlock()
	st.attempts++
	if res.err == nil && res.status == http.StatusCreated {
		st.created, st.createdOnTry, st.id = true, st.attempts, passengerID(res.body)
		return
	}
	reason := errKind(res.err)
	if res.err == nil {
		reason = strconv.Itoa(res.status) + " " + res.code
	}
	st.failures[reason]++
	if res.err == nil && res.status < 500 {
		return // refused for good: counted as unexpected
	}
	wait := time.Second
	if ra, err := strconv.Atoi(res.header.Get("Retry-After")); err == nil && time.Duration(ra)*time.Second < wait {
		wait = time.Duration(ra) * time.Second
	}
	o.pending = append(o.pending, pendingCreate{key: key, at: time.Now().Add(wait)})
}

func (o *outage) post(ctx context.Context, key string, body []byte) result {
	return send(ctx, o.client, o.r.base(), call{method: http.MethodPost, path: "/api/v2/passengers", token: o.tok.Secret,
		body: body, header: http.Header{"Idempotency-Key": {key}}})
}

func passengerID(body []byte) int64 {
	var env struct {
		Data struct {
			PassengerID int64 `json:"passenger_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	return env.Data.PassengerID
}

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
			if res.err == nil {
				label = strconv.Itoa(res.status)
			}
			o.rec.mark(p + " " + label)
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

// report prints the figures, retries abandoned creates and checks the
// database.
func (o *outage) report(ctx context.Context, pg *cluster) error {
	e, c := o.e, &checks{e: o.e}
	elapsed := o.since()
	if o.freeze {
		e.printf("\noutage: database frozen at %.1f s, thawed at %.1f s (%.1f s)\n", o.stoppedAt.Seconds(), o.startedAt.Seconds(), o.downFor.Seconds())
	} else {
		e.printf("\noutage: database stop begun at %.1f s (pg_ctl stop took %s ms), accepting connections again at %.1f s (down %.1f s)\n",
			o.stoppedAt.Seconds(), ms(o.stopTook), o.startedAt.Seconds(), o.downFor.Seconds())
	}
	o.rec.table(e.out, elapsed)
	e.printf("per second (answers; /readyz and /healthz probed once a second):\n")
	stopSec, startSec := int(o.stoppedAt/time.Second), int(o.startedAt/time.Second)
	o.rec.timeline(e.out, []string{"2xx", "503", "4xx", "5xx", "error", "/readyz 200", "/readyz 503", "/healthz 200"}, 1, func(from, to int) string {
		switch {
		case from <= stopSec && stopSec <= to && o.freeze:
			return "← database frozen"
		case from <= startSec && startSec <= to && o.freeze:
			return "← database thawed"
		case from <= stopSec && stopSec <= to:
			return "← database stopped"
		case from <= startSec && startSec <= to:
			return "← database started"
		}
		return ""
	})
	slices.Sort(o.lat503)
	e.printf("  503 latency: p50 %s ms, p99 %s ms, max %s ms over %d answers; Retry-After values %v\n",
		ms(pct(o.lat503, 50)), ms(pct(o.lat503, 99)), ms(pct(o.lat503, 100)), len(o.lat503), o.retryAfter)
	e.printf("  first 503 %.2f s after the stop began; last 503 at %.1f s; first 2xx %.2f s after the database was back\n",
		(o.first503 - o.stoppedAt).Seconds(), o.last503.Seconds(), (o.firstOKAfterRestart - o.startedAt).Seconds())
	_, statuses, errs := o.rec.totals()
	other := 0
	for st, n := range statuses {
		if st != http.StatusOK && st != http.StatusCreated && st != http.StatusServiceUnavailable {
			other += n
		}
	}
	c.expect(o.stopErr == nil && o.restartError == nil, "the private cluster stopped and started (%v, %v)", o.stopErr, o.restartError)
	c.expect(statuses[http.StatusServiceUnavailable] > 0 && o.noRetryAfter == 0, "the outage answered 503 SERVICE_UNAVAILABLE, every one with Retry-After (%d without)", o.noRetryAfter)
	c.expect(pct(o.lat503, 100) < 11*time.Second, "every 503 came within the request timeout (max %s ms)", ms(pct(o.lat503, 100)))
	c.expect(other == 0 && errs == 0, "no status other than 200/201/503 and no transport error (%d other, %d errors)", other, errs)
	c.expect(o.firstOKAfterRestart > 0 && o.firstOKAfterRestart-o.startedAt < 10*time.Second, "the API recovered by itself within 10 s of the database's return")
	c.expect(o.last503 < o.startedAt+10*time.Second, "no 503 later than 10 s after the database's return")
	for _, l := range o.r.logLines("request failed") {
		if l["code"] != "SERVICE_UNAVAILABLE" {
			c.expect(false, "a request failed with %v: %v", l["code"], l["error"])
		}
	}
	return o.checkData(ctx, c, pg)
}
