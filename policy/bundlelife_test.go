package policy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/bundle"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// hangGuard bounds how long a test waits for a call that must return: a
// guard against a hang, not a timing assertion.
const hangGuard = 60 * time.Second

// returns runs fn in a goroutine and reports whether it returned within
// hangGuard.
func returns(fn func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
		return true
	case <-time.After(hangGuard):
		return false
	}
}

// hang answers nothing until the client gives up or release is closed,
// then 503.
func hang(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}
}

// TestBundleURLHangs (issue 19 item 4): a bundle URL that never answers
// fails the start within the fetch deadline with a message that says so;
// on a serving engine a hanging poll holds no lock, so a SIGHUP reload
// completes (and swaps) while the poll still waits; the hanging poll ends
// at its deadline, the set in force serving on; and the policy reports
// itself stale once the URL has not confirmed it for BundleStaleAfter,
// fresh again after the next 304. On 3a7d212 New and the second reload
// never returned.
func TestBundleURLHangs(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	srv := &switchServer{}
	srv.set(hang(release))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer close(release) // before ts.Close, which waits for the handlers

	var err error
	if !returns(func() {
		_, err = New(ctx, Options{BundleURL: ts.URL, HTTPClient: ts.Client(), BundleTimeout: 200 * time.Millisecond, Schema: ResourceList(testResources)})
	}) {
		t.Fatal("New against a hanging bundle URL did not return")
	}
	if err == nil || !strings.Contains(err.Error(), "no complete answer within 200ms") {
		t.Fatalf("New against a hanging URL: %v", err)
	}

	// A serving engine; its poll hangs, a SIGHUP reload goes through.
	files := embeddedRego(t)
	srv.set(serveBody(buildBundle(t, files, "r1", "")))
	e := newEngine(t, Options{BundleURL: ts.URL, HTTPClient: ts.Client(), BundleTimeout: hangGuard})
	rev1 := e.Revision()
	narrowed := embeddedRego(t)
	narrowed["fleet/authz/authz.rego"] += "\n# r2\n"
	var first atomic.Bool
	first.Store(true)
	hangFirst := hang(release)
	r2 := serveBody(buildBundle(t, narrowed, "r2", ""))
	srv.set(func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(true, false) {
			hangFirst(w, r)
			return
		}
		r2(w, r)
	})
	pollDone := make(chan error, 1)
	hits := srv.hits.Load()
	go func() { _, err := e.Reload(ctx, "poll"); pollDone <- err }()
	for srv.hits.Load() == hits { // the poll is at the server
		time.Sleep(time.Millisecond)
	}
	var res ReloadResult
	if !returns(func() { res, err = e.Reload(ctx, "SIGHUP") }) {
		t.Fatal("a SIGHUP reload waited behind a hanging poll")
	}
	if err != nil || !res.Changed || !strings.HasPrefix(e.Revision(), "r2@") {
		t.Fatalf("SIGHUP during a hanging poll: %+v %v", res, err)
	}
	select {
	case err := <-pollDone:
		t.Fatalf("the hanging poll returned before its server answered: %v", err)
	default:
	}

	// A poll that runs into its deadline: an error naming it, the set in
	// force kept.
	short := newEngine(t, Options{BundleURL: ts.URL, HTTPClient: ts.Client(), BundleTimeout: 300 * time.Millisecond})
	revShort := short.Revision()
	srv.set(hang(release))
	if !returns(func() { _, err = short.Reload(ctx, "poll") }) {
		t.Fatal("a poll of a hanging URL did not return")
	}
	if err == nil || !strings.Contains(err.Error(), "no complete answer within 300ms") || short.Revision() != revShort {
		t.Errorf("poll of a hanging URL: %v, revision %s", err, short.Revision())
	}
	if rev := e.Revision(); rev == rev1 {
		t.Error("the SIGHUP's bundle is not in force")
	}
}

// TestBundleURLStale (issue 19 item 4): Freshness and the gauges
// fleet.policy.stale and fleet.policy.refresh_age report a bundle URL
// that has not confirmed the set in force for BundleStaleAfter (failed
// fetches and a refused bundle confirm nothing), and fresh again once a
// poll confirms it.
func TestBundleURLStale(t *testing.T) {
	ctx := context.Background()
	keys := newTestKeys(t)
	verify := keys.verification(t)
	srv := &bundleServer{}
	r1 := buildBundle(t, embeddedRego(t), "r1", keys.private)
	srv.set(r1, `"e1"`)
	var down atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	reader := sdkmetric.NewManualReader()
	e := newEngine(t, Options{BundleURL: ts.URL, BundleVerification: verify, HTTPClient: ts.Client(),
		BundleStaleAfter: 3 * time.Minute, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	clock := time.Now()
	var clockMu sync.Mutex
	e.now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }
	gauges := func() (stale int64, age float64) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		stale, age = -1, -1
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch m.Name {
				case "fleet.policy.stale":
					stale = m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value
				case "fleet.policy.refresh_age":
					age = m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value
				}
			}
		}
		return stale, age
	}
	// New confirmed it just now (the fake clock started after New: its
	// refresh time is the real clock's).
	e.urlMu.Lock()
	e.url.refreshed = clock
	e.urlMu.Unlock()
	if _, stale := e.Freshness(); stale {
		t.Fatal("stale right after the start")
	}
	advance(2 * time.Minute)
	down.Store(true)
	_, _ = e.Reload(ctx, "poll")
	if _, stale := e.Freshness(); stale {
		t.Error("stale after 2 minutes, with 3 allowed")
	}
	advance(2 * time.Minute)
	_, _ = e.Reload(ctx, "poll")
	at, stale := e.Freshness()
	if !stale || !at.Equal(clock.Add(-4*time.Minute)) {
		t.Errorf("4 minutes of failed polls: stale %t, refreshed %s", stale, at)
	}
	if s, age := gauges(); s != 1 || age != 240 {
		t.Errorf("gauges: stale %d, refresh age %v; want 1, 240", s, age)
	}
	// A refused bundle confirms nothing either.
	down.Store(false)
	srv.set(buildBundle(t, embeddedRego(t), "unsigned", ""), `"e2"`)
	if _, err := e.Reload(ctx, "poll"); err == nil {
		t.Fatal("unsigned bundle accepted")
	}
	if _, stale := e.Freshness(); !stale {
		t.Error("a refused bundle made the policy fresh")
	}
	// The server serves the bundle in force again: a poll confirms it.
	srv.set(r1, `"e1"`)
	if res, err := e.Reload(ctx, "poll"); err != nil || res.Changed {
		t.Errorf("the bundle in force served again: %+v %v", res, err)
	}
	if _, stale := e.Freshness(); stale {
		t.Error("still stale after the URL confirmed a set")
	}
	if s, age := gauges(); s != 0 || age != 0 {
		t.Errorf("gauges after the refresh: stale %d, refresh age %v", s, age)
	}
	// A directory source is never stale and has no refresh time.
	if at, stale := engine(t).Freshness(); stale || !at.IsZero() {
		t.Errorf("embedded set: %s %t", at, stale)
	}
}

// reloadCounts reads fleet.policy.reloads by result.
func reloadCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "fleet.policy.reloads" {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					r, _ := dp.Attributes.Value("result")
					counts[r.AsString()] += dp.Value
				}
			}
		}
	}
	return counts
}

// TestBundlePollOncePerOutcome (issue 19 item 21): a bundle URL without
// ETag, polled many times, logs and counts each distinct outcome once: a
// refused bundle one ERROR and one refusal however many polls fetch it
// again, a 404 one WARN; when the outcome changes and comes back, it is
// reported again; a SIGHUP reports its outcome whatever came before. On
// 3a7d212 every poll logged and counted again.
func TestBundlePollOncePerOutcome(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys, verify, files := signedSet(t)
	srv := &switchServer{}
	srv.set(serveBody(buildBundle(t, files, "r1", keys.private)))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var logs syncBuffer
	reader := sdkmetric.NewManualReader()
	e := newEngine(t, Options{BundleURL: ts.URL, BundleVerification: verify, HTTPClient: ts.Client(),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	rev := e.Revision()
	done := make(chan struct{})
	go func() { e.Watch(ctx, 2*time.Millisecond); close(done) }()
	polls := func(n int64) {
		t.Helper()
		from := srv.hits.Load()
		waitFor(t, "polls", func() bool { return srv.hits.Load() >= from+n }, &logs)
	}
	count := func(msg string) int { return strings.Count(logs.String(), `"msg":"`+msg+`"`) }

	tampered := retamper(t, files, "r2", keys.private)
	srv.set(serveBody(tampered))
	polls(10)
	if n := count("policy reload refused"); n != 1 {
		t.Errorf("a refused bundle fetched by 10 polls: %d refusals logged, want 1", n)
	}
	notFound := func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	srv.set(notFound)
	polls(10)
	if n := count("policy bundle poll"); n != 1 {
		t.Errorf("10 polls answered 404: %d lines logged, want 1", n)
	}
	// The refused bundle again after the 404: a new outcome, reported.
	srv.set(serveBody(tampered))
	polls(10)
	if n := count("policy reload refused"); n != 2 {
		t.Errorf("the refused bundle after a 404: %d refusals logged in all, want 2", n)
	}
	cancel()
	<-done
	if c := reloadCounts(t, reader); c["refused"] != 2 || c["error"] != 1 {
		t.Errorf("reload counts %v, want refused 2, error 1", c)
	}
	// A SIGHUP reports the refusal, though a poll would not.
	if _, err := e.Reload(context.Background(), "SIGHUP"); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("SIGHUP on the refused bundle: %v", err)
	}
	if n := count("policy reload refused"); n != 3 {
		t.Errorf("the SIGHUP's refusal: %d logged in all, want 3", n)
	}
	if e.Revision() != rev {
		t.Errorf("revision %s, want %s kept", e.Revision(), rev)
	}
}

// closeReports is the embedded set with GET /reports closed to every
// subaccount (it needs a privilege no account has), without the authz
// tests that pin the old rule.
func closeReports(t *testing.T) map[string]string {
	t.Helper()
	files := embeddedRego(t)
	old := `"GET /reports": "reports",`
	if !strings.Contains(files["fleet/authz/authz.rego"], old) {
		t.Fatal("authz.rego has no GET /reports privilege")
	}
	files["fleet/authz/authz.rego"] = strings.Replace(files["fleet/authz/authz.rego"], old, `"GET /reports": "reports_audited",`, 1)
	delete(files, "fleet/authz/authz_test.rego")
	return files
}

// reportsOpen reports whether a subaccount holding reports may GET /reports.
func reportsOpen(t *testing.T, e *Engine) bool {
	t.Helper()
	d, err := e.Decide(context.Background(), principal("subaccount", "reports").at("GET", "/reports"))
	if err != nil {
		t.Fatal(err)
	}
	return d.Allow
}

// TestBundleRollbackRefused (issue 19 item 5): bundles signed with the
// same key are ordered by the sequence in their signed .manifest. After a
// newer bundle (sequence 20) closed GET /reports, an older one (10) that
// opens it is refused, from a URL and from a file, and GET /reports stays
// closed; so is another bundle under the sequence in force, and a signed
// bundle without a sequence (at start too). FLEET_POLICY_ALLOW_ROLLBACK
// (Options.AllowRollback) lets the older one in, and
// FLEET_POLICY_BUNDLE_MIN_SEQUENCE refuses a start below it. On 3a7d212
// the older bundle replaced the newer and re-opened GET /reports.
func TestBundleRollbackRefused(t *testing.T) {
	ctx := context.Background()
	keys := newTestKeys(t)
	verify := keys.verification(t)
	older := writeBundle(t, buildBundleSeq(t, embeddedRego(t), "2026-11-01", keys.private, 10))
	newer := writeBundle(t, buildBundleSeq(t, closeReports(t), "2026-11-20", keys.private, 20))
	sameSeq := writeBundle(t, buildBundleSeq(t, embeddedRego(t), "2026-11-21", keys.private, 20))
	unsequenced := writeBundle(t, buildBundleSeq(t, embeddedRego(t), "2026-11-22", keys.private, 0))
	// opa build --revision N: a plain number is the sequence.
	revision15 := writeBundle(t, buildBundleSeq(t, embeddedRego(t), "15", keys.private, 0))
	revision30 := writeBundle(t, buildBundleSeq(t, embeddedRego(t), "30", keys.private, 0))

	srv := &switchServer{}
	srv.set(serveBody(older))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	file := writeTemp(t, "fleet.tar.gz", older)
	for _, src := range []struct {
		name string
		opts Options
		set  func([]byte)
	}{
		{"URL", Options{BundleURL: ts.URL, HTTPClient: ts.Client()}, func(b []byte) { srv.set(serveBody(b)) }},
		{"file", Options{Dir: file}, func(b []byte) { writeFileAtomic(t, file, b) }},
	} {
		t.Run(src.name, func(t *testing.T) {
			src.set(older)
			opts := src.opts
			opts.BundleVerification = verify
			e := newEngine(t, opts)
			if !reportsOpen(t, e) {
				t.Fatal("GET /reports closed in the older bundle")
			}
			src.set(newer)
			if res, err := e.Reload(ctx, "SIGHUP"); err != nil || !res.Changed || reportsOpen(t, e) {
				t.Fatalf("the newer bundle: %+v %v, GET /reports open %t", res, err, reportsOpen(t, e))
			}
			revNewer := e.Revision()
			for _, c := range []struct {
				name string
				body []byte
				want string
			}{
				{"older", older, "rollback refused: sequence 10 is older than 20"},
				{"same sequence", sameSeq, "sequence 20 is the one in force"},
				{"no sequence", unsequenced, "no sequence (fleetapi_sequence"},
				{"revision 15", revision15, "sequence 15 is older than 20"},
			} {
				src.set(c.body)
				_, err := e.Reload(ctx, "SIGHUP")
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s bundle: %v, want a refusal mentioning %q", c.name, err, c.want)
				}
				if e.Revision() != revNewer || reportsOpen(t, e) {
					t.Errorf("%s bundle: revision %s, GET /reports open %t; want %s kept, closed", c.name, e.Revision(), reportsOpen(t, e), revNewer)
				}
			}
			// A newer one, numbered by its revision, goes in.
			src.set(revision30)
			if res, err := e.Reload(ctx, "SIGHUP"); err != nil || !res.Changed || !strings.HasPrefix(e.Revision(), "30@") {
				t.Errorf("revision 30 after sequence 20: %+v %v", res, err)
			}
			// The operator allows the rollback explicitly.
			src.set(newer)
			opts.AllowRollback = true
			allowing := newEngine(t, opts)
			src.set(older)
			if res, err := allowing.Reload(ctx, "SIGHUP"); err != nil || !res.Changed || !reportsOpen(t, allowing) {
				t.Errorf("rollback allowed: %+v %v", res, err)
			}
			// A signed bundle without a sequence, or below the floor, does
			// not start.
			src.set(unsequenced)
			opts.AllowRollback = false
			if _, err := New(ctx, withResources(opts)); err == nil || !strings.Contains(err.Error(), "no sequence (fleetapi_sequence") {
				t.Errorf("start from an unsequenced signed bundle: %v", err)
			}
			src.set(older)
			opts.MinBundleSequence = 11
			if _, err := New(ctx, withResources(opts)); err == nil || !strings.Contains(err.Error(), "below the minimum 11") {
				t.Errorf("start below the minimum sequence: %v", err)
			}
		})
	}
}

func withResources(o Options) Options {
	o.Schema = ResourceList(testResources)
	return o
}

// TestManifestSequence: the sequence is the metadata's fleetapi_sequence,
// else a revision that is a plain positive number; a malformed
// fleetapi_sequence is an error.
func TestManifestSequence(t *testing.T) {
	for _, c := range []struct {
		m    bundle.Manifest
		want int64
		err  bool
	}{
		{bundle.Manifest{Revision: "r1"}, 0, false},
		{bundle.Manifest{Revision: "2026-11-22.1"}, 0, false},
		{bundle.Manifest{Revision: "42"}, 42, false},
		{bundle.Manifest{Revision: "+42"}, 0, false},
		{bundle.Manifest{Revision: "0"}, 0, false},
		{bundle.Manifest{Revision: "42", Metadata: map[string]any{SequenceKey: json.Number("7")}}, 7, false},
		{bundle.Manifest{Metadata: map[string]any{SequenceKey: float64(9)}}, 9, false},
		{bundle.Manifest{Metadata: map[string]any{SequenceKey: json.Number("-1")}}, 0, true},
		{bundle.Manifest{Metadata: map[string]any{SequenceKey: json.Number("1.5")}}, 0, true},
		{bundle.Manifest{Metadata: map[string]any{SequenceKey: "7"}}, 0, true},
		{bundle.Manifest{Metadata: map[string]any{SequenceKey: json.Number("9007199254740992")}}, 0, true},
	} {
		got, err := manifestSequence(c.m)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%+v: %d %v, want %d (error %t)", c.m, got, err, c.want, c.err)
		}
	}
}
