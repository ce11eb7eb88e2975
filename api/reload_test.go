package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// lockedBuffer is a bytes.Buffer for concurrent writers (the decision log).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// policySets are the files that differ between two policy sets over a
// copy of policy/rego: set A is the repository's; set B narrows it — a
// manager no longer sees its users' rows (scope) and GET /services needs
// the reports privilege (decision: the demo subaccount globex-day, which
// holds only event_notifications, is denied) — and drops the tests that
// pin A's rules. A nil content means the file is absent.
type policySets struct {
	dir  string
	a, b map[string][]byte
}

func newPolicySets(t testing.TB) *policySets {
	t.Helper()
	src := filepath.Join("..", "policy", "rego")
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &policySets{dir: dir, a: map[string][]byte{}, b: map[string][]byte{}}
	for _, f := range []string{"fleet/scope/scope.rego", "fleet/authz/authz.rego", "fleet/scope/scope_test.rego", "fleet/authz/authz_test.rego"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		s.a[f] = b
		s.b[f] = nil
	}
	replace := func(f, old, new string) {
		if !bytes.Contains(s.a[f], []byte(old)) {
			t.Fatalf("%s lacks %q", f, old)
		}
		s.b[f] = bytes.Replace(s.a[f], []byte(old), []byte(new), 1)
	}
	replace("fleet/scope/scope.rego", "visible(row) if {\n\tusable\n\tinput.account.type == \"manager\"\n\trow.manager_id == input.account.id\n}", "")
	replace("fleet/authz/authz.rego", `"GET /reports": "reports",`, "\"GET /reports\": \"reports\",\n\t\"GET /services\": \"reports\",")
	return s
}

// install writes set (a or b) into the directory, file by file with a
// rename (or a removal).
func (s *policySets) install(t testing.TB, set map[string][]byte) {
	t.Helper()
	for f, b := range set {
		p := filepath.Join(s.dir, f)
		if b == nil {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
}

// reloadAPI is the real router over the demo data with an engine on a
// policy directory, its decision log in a buffer.
type reloadAPI struct {
	handler http.Handler
	engine  *policy.Engine
	log     *lockedBuffer
}

func newReloadAPI(t testing.TB, dir string) *reloadAPI {
	t.Helper()
	ctx := context.Background()
	db := storagetest.New(t)
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	engine, err := policy.New(ctx, policy.Options{Dir: dir, DecisionLog: log, Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(db.DB)
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store, Ready: store, RateLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	return &reloadAPI{handler: srv.Handler(), engine: engine, log: log}
}

// observed is one response under load: whose, its trace id, status, code
// and the list's total.
type observed struct {
	who     string
	traceID string
	status  int
	code    string
	total   float64
}

// list sends GET /services?per_page=1 with a trace id of its own and
// returns what it saw.
func (r *reloadAPI) list(who, token string, n uint64) observed {
	traceID := fmt.Sprintf("%032x", n+1)
	req := httptest.NewRequest(http.MethodGet, "/api/v2/services?per_page=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("traceparent", "00-"+traceID+"-00000000000000a1-01")
	rec := httptest.NewRecorder()
	r.handler.ServeHTTP(rec, req)
	o := observed{who: who, traceID: traceID, status: rec.Code}
	var body struct {
		Meta  struct{ Total float64 }
		Error struct{ Code string }
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	o.total, o.code = body.Meta.Total, body.Error.Code
	return o
}

// revisions maps each decision record's trace id to its revision.
func (r *reloadAPI) revisions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.log.String()), "\n") {
		var rec struct {
			TraceID  string `json:"trace_id"`
			Revision string `json:"revision"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("decision log line %q: %v", line, err)
		}
		if prev, dup := out[rec.TraceID]; dup && prev != rec.Revision {
			t.Errorf("trace %s decided by two revisions", rec.TraceID)
		}
		out[rec.TraceID] = rec.Revision
	}
	return out
}

// TestHotReloadUnderLoad swaps two policy sets that decide and scope
// differently while clients hit the real router over the real database:
// every response is consistent with exactly one set — the revision that
// decided it (its decision log record, found by its trace id) is the one
// whose scope produced its rows — and no request fails during a swap.
func TestHotReloadUnderLoad(t *testing.T) {
	ctx := context.Background()
	sets := newPolicySets(t)
	r := newReloadAPI(t, sets.dir)
	manager, sub := demoToken(t, "fleetco-all"), demoToken(t, "globex-day-all")

	// What each set answers, measured alone.
	want := map[string]struct{ managerTotal, subStatus float64 }{}
	var seq atomic.Uint64
	for _, set := range []map[string][]byte{sets.b, sets.a} {
		m, s := r.list("manager", manager, seq.Add(1)), r.list("sub", sub, seq.Add(1))
		if m.status != 200 {
			t.Fatalf("manager list under %s: %d", r.engine.Revision(), m.status)
		}
		want[r.engine.Revision()] = struct{ managerTotal, subStatus float64 }{m.total, float64(s.status)}
		sets.install(t, set)
		if res, err := r.engine.Reload(ctx, "test"); err != nil || !res.Changed {
			t.Fatalf("reload: %+v %v", res, err)
		}
	}
	if len(want) != 2 {
		t.Fatalf("two sets, %d revisions", len(want))
	}
	var totals []float64
	for _, w := range want {
		totals = append(totals, w.managerTotal)
	}
	if totals[0] == totals[1] {
		t.Fatalf("the two sets scope the manager alike: %v", want)
	}

	const clients, swaps = 8, 6
	stop := make(chan struct{})
	var mu sync.Mutex
	var seen []observed
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var o observed
				if i%2 == 0 {
					o = r.list("manager", manager, seq.Add(1))
				} else {
					o = r.list("sub", sub, seq.Add(1))
				}
				mu.Lock()
				seen = append(seen, o)
				mu.Unlock()
			}
		})
	}
	for i := range swaps {
		set := sets.b
		if i%2 == 1 {
			set = sets.a
		}
		sets.install(t, set)
		if res, err := r.engine.Reload(ctx, "test"); err != nil || !res.Changed {
			t.Errorf("swap %d: %+v %v", i, res, err)
		}
	}
	close(stop)
	wg.Wait()

	revs := r.revisions(t)
	per := map[string]int{}
	for _, o := range seen {
		rev, ok := revs[o.traceID]
		if !ok {
			t.Fatalf("no decision record for trace %s (%+v)", o.traceID, o)
		}
		per[rev]++
		w, ok := want[rev]
		if !ok {
			t.Fatalf("decided by an unknown revision %s", rev)
		}
		switch {
		case o.status >= 500 || (o.status != 200 && o.status != 403):
			t.Errorf("%s: status %d %s during a swap", o.who, o.status, o.code)
		case o.who == "manager" && (o.status != 200 || o.total != w.managerTotal):
			t.Errorf("manager: decided by %s but %d with total %v, want %v (a mixed answer)", rev, o.status, o.total, w.managerTotal)
		case o.who == "sub" && float64(o.status) != w.subStatus:
			t.Errorf("subaccount: decided by %s but %d %s, want %v", rev, o.status, o.code, w.subStatus)
		}
	}
	if len(per) != 2 {
		t.Errorf("responses per revision %v: want both sets to have answered under load", per)
	}
	t.Logf("%d responses across %d swaps: %v", len(seen), swaps, per)
}

// swapOnDecide is the real engine with one addition: after each decision
// it swaps the other policy set in (a real Reload) before the request
// goes on, so that every request's scope is computed after a swap. It
// puts a reload exactly where a mixed answer would come from.
type swapOnDecide struct {
	*policy.Engine
	t    *testing.T
	sets *policySets
	// toB: the next swap installs set B (else A).
	toB *bool
}

func (s swapOnDecide) Decide(ctx context.Context, in policy.Input) (policy.Decision, error) {
	d, err := s.Engine.Decide(ctx, in)
	set := s.sets.a
	if *s.toB {
		set = s.sets.b
	}
	*s.toB = !*s.toB
	s.sets.install(s.t, set)
	if res, rerr := s.Engine.Reload(ctx, "test"); rerr != nil || !res.Changed {
		s.t.Errorf("reload during a request: %+v %v", res, rerr)
	}
	return d, err
}

// TestReloadMidRequest: a reload between a request's decision and its
// scope does not reach that request — its rows are those of the revision
// that decided it (the guard pins the revision for the whole request).
func TestReloadMidRequest(t *testing.T) {
	ctx := context.Background()
	sets := newPolicySets(t)
	r := newReloadAPI(t, sets.dir)
	manager := demoToken(t, "fleetco-all")
	// The manager's total under each set, measured alone.
	totals := map[string]float64{}
	for _, set := range []map[string][]byte{sets.b, sets.a} {
		totals[r.engine.Revision()] = r.list("manager", manager, uint64(len(totals))).total
		sets.install(t, set)
		if _, err := r.engine.Reload(ctx, "test"); err != nil {
			t.Fatal(err)
		}
	}
	toB := true // set A is in force
	db := storagetest.New(t)
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(db.DB)
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: store}, Store: store, Ready: store,
		Policy: swapOnDecide{Engine: r.engine, t: t, sets: sets, toB: &toB}})
	if err != nil {
		t.Fatal(err)
	}
	r.handler = srv.Handler()
	for i := range 4 {
		o := r.list("manager", manager, uint64(100+i))
		rev := r.revisions(t)[o.traceID]
		if o.status != 200 || o.total != totals[rev] {
			t.Errorf("request %d decided by %s: %d, total %v, want %v (the scope of the other set)", i, rev, o.status, o.total, totals[rev])
		}
	}
}

// BenchmarkListDuringReload measures a manager's GET /services through the
// real router and database with the policy steady, and while the policy
// set is swapped back and forth without pause (each reload runs every
// start-up check); reloads/op says how many swaps the run saw. The
// difference is the in-flight effect of a reload: the CPU the checks take
// from the requests (a request never waits for a reload: it reads the
// snapshot pointer once).
func BenchmarkListDuringReload(b *testing.B) {
	for _, reloading := range []bool{false, true} {
		name := "steady"
		if reloading {
			name = "reloading"
		}
		b.Run(name, func(b *testing.B) {
			sets := newPolicySets(b)
			r := newReloadAPI(b, sets.dir)
			tok := demoToken(b, "fleetco-all")
			stop := make(chan struct{})
			var reloads atomic.Int64
			var wg sync.WaitGroup
			if reloading {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						set := sets.b
						if i%2 == 1 {
							set = sets.a
						}
						sets.install(b, set)
						if _, err := r.engine.Reload(context.Background(), "bench"); err == nil {
							reloads.Add(1)
						}
					}
				})
			}
			var seq atomic.Uint64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if o := r.list("manager", tok, seq.Add(1)); o.status != 200 {
						b.Errorf("status %d %s", o.status, o.code)
					}
				}
			})
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(reloads.Load())/float64(b.N), "reloads/op")
		})
	}
}
