package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// managerSubtreeRule is the scope rule of the embedded set that lets a
// manager see its users' rows; narrowSet removes it.
const managerSubtreeRule = `visible(row) if {
	usable
	input.account.type == "manager"
	row.manager_id == input.account.id
}`

// narrowSet turns the policy directory dir (a copy of the embedded set)
// into another set that decides differently: a manager no longer sees its
// users' rows (scope), and GET /services needs the reports privilege
// (decision: a subaccount with only event_notifications is denied). The
// tests of the changed packages go (they pin the embedded behaviour).
func narrowSet(t testing.TB, dir string) {
	t.Helper()
	replaceIn(t, filepath.Join(dir, "fleet/scope/scope.rego"), managerSubtreeRule, "")
	replaceIn(t, filepath.Join(dir, "fleet/authz/authz.rego"), `"GET /reports": "reports",`, `"GET /reports": "reports",
	"GET /services": "reports",`)
	for _, f := range []string{"fleet/scope/scope_test.rego", "fleet/authz/authz_test.rego"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

func replaceIn(t testing.TB, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	writeFileAtomic(t, file, bytes.Replace(b, []byte(old), []byte(new), 1))
}

// writeFileAtomic replaces file by a rename, as a deployment would.
func writeFileAtomic(t testing.TB, file string, b []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(file), ".tmp-"+filepath.Base(file))
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// managerView is the services scope of a manager (id 7) and the decision
// of GET /services for a subaccount holding only event_notifications.
func managerView(t *testing.T, ctx context.Context, e *Engine) (string, bool) {
	t.Helper()
	s, err := e.Scope(ctx, principal("manager"), "services")
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(ctx, principal("subaccount", "event_notifications").at("GET", "/services"))
	if err != nil {
		t.Fatal(err)
	}
	where, _ := s.Where()
	return where.String(), d.Allow
}

// TestReloadSwapsAndRefuses: Reload swaps in a changed set (its decisions
// and scopes in force at once, the revision new), leaves a pinned request
// on its revision, swaps nothing for an unchanged source, and refuses
// every broken set, the old one serving on; the reload counter counts ok
// and refused.
func TestReloadSwapsAndRefuses(t *testing.T) {
	ctx := context.Background()
	dir := copyPolicy(t)
	reader := sdkmetric.NewManualReader()
	var logs bytes.Buffer
	e := newEngine(t, Options{
		Dir: dir, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	revA := e.Revision()
	whereA, allowA := managerView(t, ctx, e)
	if !allowA {
		t.Fatal("embedded set denies GET /services to a subaccount")
	}
	pinned := e.Pin(ctx)

	res, err := e.Reload(ctx, "test")
	if err != nil || res.Changed || res.Revision != revA {
		t.Fatalf("unchanged source: %+v %v", res, err)
	}

	narrowSet(t, dir)
	res, err = e.Reload(ctx, "test")
	if err != nil || !res.Changed || res.Previous != revA || res.Revision == revA || e.Revision() != res.Revision {
		t.Fatalf("changed source: %+v %v (in force %s)", res, err, e.Revision())
	}
	revB := res.Revision
	whereB, allowB := managerView(t, ctx, e)
	if allowB || whereB == whereA {
		t.Fatalf("new set not in force: allow %t, scope %s (old %s)", allowB, whereB, whereA)
	}
	// The request pinned before the swap still answers with the old set.
	if w, a := managerView(t, pinned, e); w != whereA || !a || e.PinnedRevision(pinned) != revA {
		t.Errorf("pinned request moved to the new set: %s %t", w, a)
	}

	broken := []struct {
		name, file, text, want string
	}{
		{"syntax", "fleet/scope/scope.rego", "\nservices if {\n", "rego_parse_error"},
		{"failing test", "fleet/manage/manage_test.rego", "\ntest_broken if false\n", "policy tests failed"},
		{"untranslatable scope", "fleet/scope/scope.rego", "\nevents if input.events.day_time.mon == true\n", `scope rule "events"`},
		{"unrestricted non-admin", "fleet/scope/scope.rego", "\nunrestricted if input.account.type == \"user\"\n", "unrestricted"},
		{"own fleet.api", "fleet/own/routes.rego", "package fleet.api\n\nroutes := []\n", "package fleet.api"},
	}
	for _, c := range broken {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, c.file)
			old, err := os.ReadFile(file)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFileAtomic(t, file, append(append([]byte{}, old...), c.text...))
			defer func() {
				if old == nil {
					_ = os.RemoveAll(filepath.Dir(file))
				} else {
					writeFileAtomic(t, file, old)
				}
			}()
			res, err := e.Reload(ctx, "test")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Reload: %+v, %v; want a refusal mentioning %q", res, err, c.want)
			}
			if e.Revision() != revB {
				t.Fatalf("revision %s after a refused set, want %s", e.Revision(), revB)
			}
			if w, a := managerView(t, ctx, e); w != whereB || a {
				t.Errorf("after a refused set: %s %t", w, a)
			}
		})
	}
	if !strings.Contains(logs.String(), `"msg":"policy reload refused"`) || !strings.Contains(logs.String(), "rego_parse_error") {
		t.Errorf("refusal not logged with its reason:\n%s", logs.String())
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	var revisions []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "fleet.policy.reloads":
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					r, _ := dp.Attributes.Value("result")
					counts[r.AsString()] += dp.Value
				}
			case "fleetapi.policy.revision.info":
				for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					r, _ := dp.Attributes.Value("revision")
					if dp.Value != 1 {
						t.Errorf("revision info %s = %d", r.AsString(), dp.Value)
					}
					revisions = append(revisions, r.AsString())
				}
			}
		}
	}
	if counts["ok"] != 1 || counts["refused"] != int64(len(broken)) {
		t.Errorf("reload counts %v, want ok 1, refused %d", counts, len(broken))
	}
	if len(revisions) != 1 || revisions[0] != revB {
		t.Errorf("revision info series %v, want only %s", revisions, revB)
	}
}

// TestWatchDirectory: a change in the watched directory is loaded without
// a signal, and a broken change is refused once, the old set serving on.
func TestWatchDirectory(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := copyPolicy(t)
	var logs syncBuffer
	e := newEngine(t, Options{Dir: dir, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	revA := e.Revision()
	done := make(chan struct{})
	go func() { e.Watch(ctx, 5*time.Millisecond); close(done) }()

	narrowSet(t, dir)
	waitFor(t, "the watched change to load", func() bool { return e.Revision() != revA }, &logs)
	revB := e.Revision()
	if _, allow := managerView(t, ctx, e); allow {
		t.Error("watched change loaded, but the old decision answers")
	}

	appendFile(t, filepath.Join(dir, "fleet/scope/scope.rego"), "\nservices if {\n")
	waitFor(t, "the broken change to be refused", func() bool {
		return strings.Contains(logs.String(), "policy reload refused")
	}, &logs)
	if e.Revision() != revB {
		t.Errorf("revision %s after a refused change, want %s", e.Revision(), revB)
	}
	cancel()
	<-done
	if n := strings.Count(logs.String(), `"msg":"policy reload refused"`); n != 1 {
		t.Errorf("the broken change was refused %d times, want once:\n%s", n, logs.String())
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// bound (a guard against a hang, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool, logs fmt.Stringer) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s; log:\n%s", what, logs)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
