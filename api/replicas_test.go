package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestMain stops the private primary and standby of the replica tests.
func TestMain(m *testing.M) { os.Exit(storagetest.Main(m)) }

// replicaAPI is the demo data on a private primary and its standby, and a
// replica set over the standby whose routing is counted.
type replicaAPI struct {
	*storagetest.Replicated
	reps    *storage.Replicas
	primary *storage.Store
	reader  *sdkmetric.ManualReader
}

func newReplicaAPI(t *testing.T, opts storage.ReplicaOptions) *replicaAPI {
	t.Helper()
	r := storagetest.NewReplicated(t)
	if _, err := importfile.Load(context.Background(), r.DB.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	r.CatchUp(t)
	reader := sdkmetric.NewManualReader()
	opts.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reps, err := storage.NewReplicas(r.DB.DB, []*bun.DB{r.Standby}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &replicaAPI{Replicated: r, reps: reps, primary: storage.NewStore(r.DB.DB), reader: reader}
}

// server builds the real API over store, authenticating on the primary,
// with the clock fixed so that two servers answer alike.
func (r *replicaAPI) server(t *testing.T, store *storage.Store) http.Handler {
	t.Helper()
	return r.tracedServer(t, store, nil)
}

// tracedServer is server with a tracer provider (nil: none).
func (r *replicaAPI) tracedServer(t *testing.T, store *storage.Store, tp *sdktrace.TracerProvider) http.Handler {
	t.Helper()
	engine, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	cfg := api.Config{Auth: &tenancy.Authenticator{Store: r.primary}, Policy: engine, Store: store, Ready: r.primary,
		RateLimit: 1_000_000, Now: func() time.Time { return now }}
	if tp != nil {
		cfg.TracerProvider = tp
	}
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler()
}

// reads returns fleet.db.reads by target and fleet.db.read_retries.
func (r *replicaAPI) reads(t *testing.T) (primary, replica, retries int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, p := range sum.DataPoints {
				target, _ := p.Attributes.Value(attribute.Key("target"))
				switch {
				case m.Name == "fleet.db.read_retries":
					retries += p.Value
				case target.AsString() == storage.TargetPrimary:
					primary += p.Value
				case target.AsString() == storage.TargetReplica:
					replica += p.Value
				}
			}
		}
	}
	return primary, replica, retries
}

// answer sends GET path with token to h and returns the status and the
// body without its request id.
func replicaAnswer(t *testing.T, h http.Handler, path, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("GET %s: %v: %q", path, err, rec.Body.Bytes())
	}
	if meta, ok := body["meta"].(map[string]any); ok {
		delete(meta, "request_id")
	}
	b, _ := json.Marshal(body)
	return rec.Code, string(b)
}

// clientReads are the GET requests of the client API that may read a
// replica, with paging, sorting, filters and search.
func clientReads(eventIDs []int64) []string {
	var out []string
	for _, res := range []string{"services", "reports", "events", "objects"} {
		out = append(out, "/api/v2/"+res, "/api/v2/"+res+"?per_page=2&page=2", "/api/v2/"+res+"?search=a", "/api/v2/"+res+"?order=desc&per_page=3")
	}
	out = append(out, "/api/v2/services/due", "/api/v2/events/999999")
	for _, id := range eventIDs {
		out = append(out, fmt.Sprintf("/api/v2/events/%d", id))
	}
	return out
}

// TestReplicaAnswersEqualPrimary is the differential test of the read
// routing: for every demo token (every account type, a subaccount with
// device grants, restricted, read-only, expired tokens) and every read of
// the client API, the server whose reads go to the caught-up standby
// answers exactly what the server reading the primary answers (status and
// body), and the replica did serve those reads: no tenant scope differs
// between primary and replica.
func TestReplicaAnswersEqualPrimary(t *testing.T) {
	r := newReplicaAPI(t, storage.ReplicaOptions{MaxLag: time.Hour})
	ctx := context.Background()
	r.reps.Check(ctx)
	if !r.reps.Usable(0) {
		t.Fatal("the caught-up standby is not usable")
	}
	onPrimary := r.server(t, r.primary)
	onReplica := r.server(t, r.primary.WithReplicas(r.reps))
	var eventIDs []int64
	if err := r.DB.NewRaw("SELECT event_id FROM events ORDER BY event_id").Scan(ctx, &eventIDs); err != nil {
		t.Fatal(err)
	}
	paths := clientReads(eventIDs)
	compared, ok := 0, 0
	byStatus := map[int]int{}
	for _, tok := range demodata.Tokens() {
		for _, path := range paths {
			ps, pb := replicaAnswer(t, onPrimary, path, tok.Secret)
			rs, rb := replicaAnswer(t, onReplica, path, tok.Secret)
			if ps != rs || pb != rb {
				t.Errorf("%s GET %s: primary %d %s\nreplica %d %s", tok.Name, path, ps, pb, rs, rb)
			}
			compared++
			byStatus[ps]++
			if ps == http.StatusOK {
				ok++
			}
		}
	}
	primary, replica, _ := r.reads(t)
	t.Logf("%d requests compared, by status %v; reads: primary %d, replica %d", compared, byStatus, primary, replica)
	if primary != 0 || replica < int64(ok) || ok == 0 {
		t.Errorf("%d requests answered 200; reads: primary %d, replica %d: the replica did not serve every allowed read", ok, primary, replica)
	}
}

// TestReplicaStandbyStopUnderLoad: the standby stopped with pg_ctl stop
// -m immediate while clients read through the API costs no 5xx and no
// failed request: reads in flight are retried on the primary and the
// replica is skipped; started again, it takes reads once the checker finds
// it caught up.
func TestReplicaStandbyStopUnderLoad(t *testing.T) {
	r := newReplicaAPI(t, storage.ReplicaOptions{MaxLag: time.Second, Interval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Add(1)
	go func() { defer run.Done(); r.reps.Run(ctx) }()
	defer run.Wait()
	defer cancel()
	waitUsable(t, r.reps, true)
	h := r.server(t, r.primary.WithReplicas(r.reps))
	token := demoToken(t, "fleetco-all")
	paths := []string{"/api/v2/services?per_page=50", "/api/v2/events", "/api/v2/services/due", "/api/v2/reports", "/api/v2/events/1"}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := httptest.NewRequest(http.MethodGet, paths[i%len(paths)], nil)
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				mu.Lock()
				statuses[rec.Code]++
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	r.StopStandby(t)
	waitUsable(t, r.reps, false)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	for status, n := range statuses {
		if status != http.StatusOK {
			t.Errorf("%d answers %d across the standby's stop", n, status)
		}
	}
	_, beforeRestart, _ := r.reads(t)

	r.StartStandby(t)
	waitUsable(t, r.reps, true)
	if code, body := replicaAnswer(t, h, paths[0], token); code != http.StatusOK {
		t.Fatalf("after the restart: %d %s", code, body)
	}
	if _, after, _ := r.reads(t); after != beforeRestart+1 {
		t.Errorf("after the restart the replica served %d reads, want 1", after-beforeRestart)
	}
}

// waitUsable waits up to 10 s for replica 0 to become usable (or skipped).
func waitUsable(t *testing.T, reps *storage.Replicas, usable bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for reps.Usable(0) != usable {
		if time.Now().After(deadline) {
			t.Fatalf("replica usable %v not within 10 s", usable)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicaSpans: the server span of a client-API read says where it ran
// (db.fleet.target and the replica's index) and every SQL span says which
// pool ran it: the list on the replica's pool, the token lookup on the
// primary's; with the replica skipped, the read's target is the primary.
func TestReplicaSpans(t *testing.T) {
	r := newReplicaAPI(t, storage.ReplicaOptions{MaxLag: time.Hour})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	primaryDB := storage.Open(r.DB.URL, storage.Options{TracerProvider: tp, Target: storage.TargetPrimary, MaxOpenConns: 2})
	replicaDB := storage.Open(r.StandbyURL, storage.Options{TracerProvider: tp, Target: storage.TargetReplica, MaxOpenConns: 2})
	t.Cleanup(func() { primaryDB.Close(); replicaDB.Close() })
	reps, err := storage.NewReplicas(primaryDB, []*bun.DB{replicaDB}, storage.ReplicaOptions{MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	reps.Check(context.Background())
	r.primary = storage.NewStore(primaryDB) // authentication on the traced primary
	h := r.tracedServer(t, r.primary.WithReplicas(reps), tp)

	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
		m := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			m[kv.Key] = kv.Value
		}
		return m
	}
	check := func(wantTarget string) {
		t.Helper()
		rec.Reset()
		if code, body := replicaAnswer(t, h, "/api/v2/services", demoToken(t, "acme-all")); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		var server sdktrace.ReadOnlySpan
		sqlTargets := map[string]int{}
		for _, s := range rec.Ended() {
			a := attrs(s)
			if s.SpanKind().String() == "server" {
				server = s
				continue
			}
			if _, ok := a["db.operation"]; ok || strings.HasPrefix(s.Name(), "SELECT") || strings.HasPrefix(s.Name(), "UPDATE") {
				sqlTargets[a[storage.AttrTarget].AsString()]++
			}
		}
		if server == nil {
			t.Fatal("no server span")
		}
		if got := attrs(server)[storage.AttrTarget].AsString(); got != wantTarget {
			t.Errorf("server span db.fleet.target = %q, want %q", got, wantTarget)
		}
		if sqlTargets[""] != 0 || sqlTargets[storage.TargetPrimary] == 0 || (wantTarget == storage.TargetReplica) != (sqlTargets[storage.TargetReplica] > 0) {
			t.Errorf("SQL spans by db.fleet.target: %v (read on %s)", sqlTargets, wantTarget)
		}
	}
	check(storage.TargetReplica)
	r.StopStandby(t)
	reps.Check(context.Background())
	check(storage.TargetPrimary)
}
