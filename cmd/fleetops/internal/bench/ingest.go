package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/procfs"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// The ingest workload (`fleetops bench --workload ingest`, docs/
// performance.md "Workloads"): --concurrency gateway clients post batches
// of --batch readings of the simulated drive (ingest_drive.go) to POST
// /readings for --ingest-duration at the highest rate the server takes,
// with a notification stream open for the reading → notification latency;
// then the floor, the same rows through storage's batch entry point at the
// same concurrency; then the read scenarios of --ingest-reads idle and
// while the gateways post at half the API's measured rate.

// postFunc stores one batch of a feed: through the API with the feed's
// token, or the floor's direct call with its principal's scope.
type postFunc func(ctx context.Context, f *feed, rs []reading) (batchOutcome, error)

// batchOutcome is what one batch's answer counted.
type batchOutcome struct {
	accepted, duplicates, rejected int64
	// firstRejection is the first rejected item's code and message.
	firstRejection string
}

// ingestResult is one ingest run's figures.
type ingestResult struct {
	name string
	// rate is the target rate in readings/s (0: as fast as it goes).
	rate                           float64
	clients, batch                 int
	batches, errors                int64
	accepted, duplicates, rejected int64
	firstError                     string
	elapsed                        time.Duration
	latency                        stats.Percentiles
	rss                            int64
	serverCPU                      time.Duration // per accepted reading
	notifications                  int64
	stream                         *streamResult
	load                           string
}

// streamResult is what the notification stream read during a run.
type streamResult struct {
	events, matched, unmatched int64
	reconnects                 int64
	latency                    stats.Percentiles
	err                        error
}

// throughput is the accepted readings per second.
func (r ingestResult) throughput() float64 { return stats.Rate(r.accepted, r.elapsed) }

// percentilesOf is stats.PercentilesOf, zero for no samples.
func percentilesOf(d []time.Duration) stats.Percentiles {
	if len(d) == 0 {
		return stats.Percentiles{}
	}
	return stats.PercentilesOf(d)
}

// runIngest drives the gateways for dur (until stop is closed when dur is
// 0), each posting its next batch as soon as the previous one is answered,
// or paced so that together they post rate readings a second. A batch in
// flight at the end completes and counts (its readings are stored). log,
// when not nil, notes each batch's send time for the stream.
func (h *harness) runIngest(ctx context.Context, name string, gws []*gateway, dur time.Duration, stop <-chan struct{}, rate float64, post postFunc, log *sentLog) ingestResult {
	res := ingestResult{name: name, rate: rate, clients: len(gws), batch: h.cfg.Batch, load: procfs.ReadLoadAverage().OneMinute()}
	var (
		mu        sync.Mutex
		lat       = make([][]time.Duration, len(gws))
		acc, dup  atomic.Int64
		rej, errs atomic.Int64
	)
	fail := func(msg string) {
		mu.Lock()
		if res.firstError == "" {
			res.firstError = strings.TrimSpace(msg)
		}
		mu.Unlock()
	}
	start := time.Now()
	deadline := start.Add(dur)
	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(h.cfg.Batch) * float64(len(gws)) / rate)
	}
	var wg sync.WaitGroup
	for i, g := range gws {
		wg.Go(func() {
			// staggered starts when paced, so the batches do not leave together
			next := start.Add(interval * time.Duration(i) / time.Duration(len(gws)))
			stopped := func() bool {
				select {
				case <-stop:
					return true
				default:
					return ctx.Err() != nil || (dur > 0 && !time.Now().Before(deadline))
				}
			}
			for !stopped() {
				if interval > 0 {
					if wait := time.Until(next); wait > 0 {
						select {
						case <-ctx.Done():
							return
						case <-stop:
							return
						case <-time.After(wait):
						}
					}
					next = next.Add(interval)
				}
				f, rs := g.batch(h.cfg.Batch, time.Now())
				if f == nil {
					return
				}
				t0 := time.Now()
				log.record(rs, t0)
				out, err := post(ctx, f, rs)
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					errs.Add(1)
					fail(err.Error())
				}
				if out.rejected > 0 {
					fail("rejected: " + out.firstRejection)
				}
				acc.Add(out.accepted)
				dup.Add(out.duplicates)
				rej.Add(out.rejected)
				lat[i] = append(lat[i], d)
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	res.batches, res.errors = int64(len(all)), errs.Load()
	res.accepted, res.duplicates, res.rejected = acc.Load(), dup.Load(), rej.Load()
	res.latency = percentilesOf(all)
	return res
}

// apiPost is a postFunc through POST /readings with the feed's token, on
// connections of its own (the read scenarios measured beside it keep
// theirs).
func (h *harness) apiPost() postFunc {
	client := &http.Client{
		Timeout: time.Minute,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: h.cfg.Concurrency,
			MaxConnsPerHost:     h.cfg.Concurrency,
			IdleConnTimeout:     time.Minute,
		},
	}
	return func(ctx context.Context, f *feed, rs []reading) (batchOutcome, error) {
		body, err := readingsBody(rs)
		if err != nil {
			return batchOutcome{}, err
		}
		b, err := doWith(ctx, client, h.cfg.BaseURL, f.member.token, apiRequest{method: "POST", path: base + "/readings", body: body, status: 200}, true)
		if err != nil {
			return batchOutcome{}, err
		}
		return readingsAnswer(b)
	}
}

// readingsAnswer reads the answer of POST /readings: {"accepted",
// "duplicates", "rejected"}, bare or in the envelope's data.
func readingsAnswer(b []byte) (batchOutcome, error) {
	type answer struct {
		Accepted   *int64 `json:"accepted"`
		Duplicates int64  `json:"duplicates"`
		Rejected   []struct {
			Index   int    `json:"index"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"rejected"`
	}
	var a struct {
		answer
		Data *answer `json:"data"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return batchOutcome{}, fmt.Errorf("readings answer: %w: %.200s", err, b)
	}
	got := a.answer
	if a.Data != nil {
		got = *a.Data
	}
	if got.Accepted == nil {
		return batchOutcome{}, fmt.Errorf("readings answer without accepted: %.200s", b)
	}
	out := batchOutcome{accepted: *got.Accepted, duplicates: got.Duplicates, rejected: int64(len(got.Rejected))}
	if len(got.Rejected) > 0 {
		r := got.Rejected[0]
		out.firstRejection = fmt.Sprintf("item %d %s %s", r.Index, r.Code, r.Message)
	}
	return out, nil
}

// maxNotificationID is the newest notification's id (0: none), to count
// those a run creates.
func (h *harness) maxNotificationID(ctx context.Context) (int64, error) {
	var id int64
	err := h.db.NewRaw("SELECT coalesce(max(id), 0) FROM notifications").Scan(ctx, &id)
	return id, err
}

// notificationsSince counts the notifications after id.
func (h *harness) notificationsSince(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := h.db.NewRaw("SELECT count(*) FROM notifications WHERE id > ?", id).Scan(ctx, &n)
	return n, err
}

// watchedDevices are the IMEIs of the devices whose notifications the
// principal of role sees on its stream: those of its account and, for a
// manager, of its users (the admin: every device).
func (h *harness) watchedDevices(ctx context.Context, role string) (map[string]bool, error) {
	p, ok := h.principals[role]
	if !ok {
		return nil, fmt.Errorf("no %s token in %s", role, h.cfg.TokensFile)
	}
	var imeis []string
	q := h.db.NewRaw("SELECT imei FROM objects WHERE account_id IN (SELECT id FROM accounts WHERE id = ? OR manager_id = ?)", p.Account.ID, p.Account.ID)
	if role == "admin" {
		q = h.db.NewRaw("SELECT imei FROM objects")
	}
	if err := q.Scan(ctx, &imeis); err != nil {
		return nil, fmt.Errorf("watched devices: %w", err)
	}
	out := make(map[string]bool, len(imeis))
	for _, s := range imeis {
		out[s] = true
	}
	return out, nil
}

// measured runs one ingest measurement at rate (0: the most) with its
// server figures (RSS, CPU) and the notifications it created.
func (h *harness) measuredIngest(ctx context.Context, name string, gws []*gateway, rate float64, post postFunc, log *sentLog) (ingestResult, error) {
	before, err := h.maxNotificationID(ctx)
	if err != nil {
		return ingestResult{}, fmt.Errorf("notifications: %w", err)
	}
	stopRSS := procfs.SamplePeakRSS(h.cfg.ServerPID, 100*time.Millisecond)
	server := startCPU(h.cfg.ServerPID)
	res := h.runIngest(ctx, name, gws, h.cfg.IngestDuration, nil, rate, post, log)
	if h.cfg.ServerPID != 0 {
		res.serverCPU = server.perRequest(res.accepted)
	}
	res.rss = stopRSS()
	if res.notifications, err = h.notificationsSince(ctx, before); err != nil {
		return res, fmt.Errorf("notifications: %w", err)
	}
	return res, nil
}

// ingestWorkload runs the ingest workload and prints its report.
func (h *harness) ingestWorkload(ctx context.Context) error {
	devs, err := loadFleet(ctx, h.db, h.cfg.IngestDevices)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	var tokens map[int64]member
	var one member
	if h.cfg.GatewayRole == "manager" {
		tokens = map[int64]member{}
		for _, m := range h.pool["manager"] {
			tokens[m.principal.Account.ID] = m
		}
		if p, ok := h.principals["manager"]; ok {
			tokens[p.Account.ID] = member{token: h.tokens["manager"], principal: p}
		}
		if len(tokens) == 0 {
			return fmt.Errorf("ingest: no manager tokens in %s", h.cfg.TokensFile)
		}
	} else {
		p, ok := h.principals[h.cfg.GatewayRole]
		if !ok {
			return fmt.Errorf("ingest: no %s token in %s", h.cfg.GatewayRole, h.cfg.TokensFile)
		}
		one = member{token: h.tokens[h.cfg.GatewayRole], principal: p}
	}
	gws, left := gateways(devs, h.cfg.Concurrency, one, tokens)
	accounts, feeds := map[int64]bool{}, 0
	for _, g := range gws {
		feeds += len(g.feeds)
		for _, d := range g.devices() {
			accounts[d.accountID] = true
		}
	}
	fmt.Fprintf(h.out, "fleetops bench ingest: %s, %d gateway clients posting with %d %s tokens, batches of %d, %d devices of %d accounts (%d left out: no token), %s per run (warm-up %s), floor pool %d\n",
		h.cfg.BaseURL, len(gws), feeds, h.cfg.GatewayRole, h.cfg.Batch, len(devs)-left, len(accounts), left, h.cfg.IngestDuration, h.cfg.Warmup, h.cfg.Pool)

	var runs []ingestResult
	api := h.apiPost()
	if err := h.prime(ctx, gws, api); err != nil {
		return err
	}
	if !h.cfg.NoAPI {
		if h.cfg.Warmup > 0 {
			warm := h.runIngest(ctx, "warm-up", gws, h.cfg.Warmup, nil, 0, api, nil)
			fmt.Fprintf(h.out, "warm-up: %d readings accepted, %d errors %s\n", warm.accepted, warm.errors, warm.firstError)
		}
		res, err := h.apiWithStream(ctx, gws, api)
		if err != nil {
			return err
		}
		runs = append(runs, res)
		fmt.Fprintln(h.out, res.line())
	}
	if !h.cfg.NoFloor {
		floor, err := h.floorPost(ctx, gws)
		if err != nil {
			return err
		}
		res, err := h.measuredIngest(ctx, "floor", gws, 0, floor, nil)
		if err != nil {
			return err
		}
		res.rss, res.serverCPU = 0, 0 // the server is idle: its figures are not the floor's
		runs = append(runs, res)
		fmt.Fprintln(h.out, res.line())
	}
	var reads []readsPair
	var loaded *ingestResult
	if !h.cfg.NoAPI && len(runs) > 0 && h.cfg.IngestReads != "" {
		rate := h.cfg.IngestRate
		if rate == 0 {
			rate = runs[0].throughput() / 2
		}
		if rate > 0 {
			if reads, loaded, err = h.readsBeside(ctx, gws, rate, api); err != nil {
				return err
			}
			fmt.Fprintln(h.out, loaded.line())
		} else {
			fmt.Fprintln(h.out, "reads beside ingestion: not measured (the API accepted no reading)")
		}
	}
	table := ingestMarkdown(runs, loaded, reads)
	fmt.Fprintln(h.out)
	fmt.Fprint(h.out, table)
	if h.cfg.MarkdownFile != "" {
		return writeFile(h.cfg.MarkdownFile, table)
	}
	return nil
}

// prime gives every device that never reported its first reading, through
// the floor (through the API with --no-floor), untimed: a device's first
// reading is evaluated against a state that remembers nothing, so every
// rule whose condition holds then fires at once (a fleet's first day, not
// its every day). Once primed, a database stays primed for later runs.
func (h *harness) prime(ctx context.Context, gws []*gateway, api postFunc) error {
	post := api
	if !h.cfg.NoFloor {
		floor, err := h.floorPost(ctx, gws)
		if err != nil {
			return err
		}
		post = floor
	}
	start := time.Now()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
		first error
	)
	for _, g := range gws {
		wg.Go(func() {
			for _, f := range g.feeds {
				todo := f.unreported()
				for i := 0; i < len(todo) && ctx.Err() == nil; i += h.cfg.Batch {
					part := todo[i:min(i+h.cfg.Batch, len(todo))]
					rs := make([]reading, len(part))
					for j, d := range part {
						rs[j] = d.next(time.Now())
					}
					out, err := post(ctx, f, rs)
					mu.Lock()
					total += out.accepted
					if err == nil && out.rejected > 0 {
						err = fmt.Errorf("rejected: %s", out.firstRejection)
					}
					if err != nil && first == nil {
						first = err
					}
					mu.Unlock()
					if err != nil {
						return
					}
					for _, d := range part {
						d.reported = true
					}
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("ingest: priming the devices: %w", first)
	}
	if total > 0 {
		fmt.Fprintf(h.out, "primed %d devices without a reading (their first reading, untimed) in %s s\n", total, stats.Seconds(time.Since(start)))
	}
	return ctx.Err()
}

// openWatch opens the notification stream of --stream-role with the log of
// its devices' readings (nil, nil without a stream role).
func (h *harness) openWatch(ctx context.Context) (*sentLog, *streamWatch, error) {
	if h.cfg.StreamRole == "" {
		return nil, nil, nil
	}
	token, ok := h.tokens[h.cfg.StreamRole]
	if !ok {
		return nil, nil, fmt.Errorf("ingest: no %s token for the stream in %s", h.cfg.StreamRole, h.cfg.TokensFile)
	}
	watched, err := h.watchedDevices(ctx, h.cfg.StreamRole)
	if err != nil {
		return nil, nil, err
	}
	log := newSentLog(watched)
	watch, err := h.openStream(ctx, token, log)
	if errors.Is(err, errNoStream) {
		// a server without the stream: the throughput is still measured
		fmt.Fprintf(h.out, "reading → notification: not measured (%v)\n", err)
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return log, watch, nil
}

// apiWithStream is the API measurement with the notification stream of
// --stream-role open.
func (h *harness) apiWithStream(ctx context.Context, gws []*gateway, api postFunc) (ingestResult, error) {
	log, watch, err := h.openWatch(ctx)
	if err != nil {
		return ingestResult{}, err
	}
	res, err := h.measuredIngest(ctx, "API", gws, 0, api, log)
	if watch != nil {
		s := watch.stop(2 * time.Second)
		res.stream = &s
	}
	return res, err
}

// readsPair is a read scenario measured idle and while ingesting.
type readsPair struct {
	idle, loaded scenarioResult
}

// readsBeside measures the read scenarios of --ingest-reads through the
// API, idle and then while the gateways post at rate readings/s.
func (h *harness) readsBeside(ctx context.Context, gws []*gateway, rate float64, api postFunc) ([]readsPair, *ingestResult, error) {
	noFloor := h.cfg.NoFloor
	h.cfg.NoFloor = true
	defer func() { h.cfg.NoFloor = noFloor }()
	var names []string
	for _, n := range strings.Split(h.cfg.IngestReads, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	pairs := make([]readsPair, len(names))
	measure := func(loaded bool) error {
		for i, name := range names {
			sc, err := h.scenario(ctx, name)
			if err != nil {
				return err
			}
			res, err := h.measure(ctx, sc)
			if err != nil {
				return err
			}
			label := "idle"
			if loaded {
				pairs[i].loaded, label = res, "ingesting"
			} else {
				pairs[i].idle = res
			}
			fmt.Fprintf(h.out, "%s (%s): %s\n", name, label, side(res.api, true))
		}
		return nil
	}
	if err := measure(false); err != nil {
		return nil, nil, err
	}
	log, watch, err := h.openWatch(ctx)
	if err != nil {
		return nil, nil, err
	}
	before, err := h.maxNotificationID(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("notifications: %w", err)
	}
	stopRSS := procfs.SamplePeakRSS(h.cfg.ServerPID, 100*time.Millisecond)
	stop := make(chan struct{})
	done := make(chan ingestResult, 1)
	go func() {
		done <- h.runIngest(ctx, fmt.Sprintf("API at %.0f/s, beside reads", rate), gws, 0, stop, rate, api, log)
	}()
	err = measure(true)
	close(stop)
	res := <-done
	res.rss = stopRSS()
	if n, cerr := h.notificationsSince(ctx, before); cerr == nil {
		res.notifications = n
	} else if err == nil {
		err = fmt.Errorf("notifications: %w", cerr)
	}
	if watch != nil {
		s := watch.stop(2 * time.Second)
		res.stream = &s
	}
	return pairs, &res, err
}
