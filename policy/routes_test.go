package policy

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/fleetapi/fleetapi/tenancy"
)

// TestRegoRoutesAreTheAPIRoutes: data.fleet.authz.routes, on which GET
// /me reports the effective permissions, lists exactly tenancy.Routes(),
// the routes the permission grammar accepts (and the api registers): the
// policy reads them from the module generated from tenancy.Routes()
// (RoutesSource), and a policy that listed its own would fail here.
func TestRegoRoutesAreTheAPIRoutes(t *testing.T) {
	e := engine(t)
	rs, err := rego.New(rego.Query("data.fleet.authz.routes"), rego.Compiler(e.cur.Load().compiler)).Eval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range single(rs).([]any) {
		got = append(got, v.(string))
	}
	var want []string
	for _, r := range tenancy.Routes() {
		want = append(want, r.String())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("data.fleet.authz.routes = %v\ntenancy.Routes()       = %v", got, want)
	}
}

// TestEmbeddedRevision: `fleetapi version` reports the revision an engine
// on the embedded set logs.
func TestEmbeddedRevision(t *testing.T) {
	rev, err := EmbeddedRevision()
	if err != nil || rev != engine(t).Revision() || len(rev) != 64 {
		t.Fatalf("EmbeddedRevision() = %q, %v; the engine's is %q", rev, err, engine(t).Revision())
	}
}

// TestRoutesFileCurrent (issue 23 item 1): the policy directory carries the
// routes module OPA's own tools need (fleet/api/routes.rego), and it is the
// one fleetapi generates from tenancy.Routes(): a route added to tenancy
// without `fleetapi policy routes --write` fails here.
func TestRoutesFileCurrent(t *testing.T) {
	got, err := fs.ReadFile(embedded, "rego/"+RoutesModule)
	if err != nil {
		t.Fatalf("the policy directory has no routes file (run: go run ./cmd/fleetapi policy routes --write): %v", err)
	}
	if string(got) != string(RoutesSource()) {
		t.Fatalf("policy/rego/%s is out of date with tenancy.Routes(); run: go run ./cmd/fleetapi policy routes --write\nfile:\n%s\nwant:\n%s", RoutesModule, got, RoutesSource())
	}
	if st, err := RoutesFileState(""); err != nil || st != "current" {
		t.Errorf("RoutesFileState of the embedded set: %q, %v", st, err)
	}
}

// TestRoutesFileReplaced: fleetapi evaluates its own routes whatever a
// set's routes file says. A set whose file is stale or missing loads, with
// the revision of the set with a current file, and decides on
// tenancy.Routes(); Check says how the file stands. A routes file in
// another package is refused.
func TestRoutesFileReplaced(t *testing.T) {
	ctx := context.Background()
	want := newEngine(t, Options{Dir: copyPolicy(t)}).Revision()
	routes := func(e *Engine) []any {
		rs, err := rego.New(rego.Query("data.fleet.authz.routes"), rego.Compiler(e.cur.Load().compiler)).Eval(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return single(rs).([]any)
	}
	for _, c := range []struct {
		name, content, state string
	}{
		{"stale", "package fleet.api\n\nroutes := [\"GET /me\"]\n", "out of date"},
		{"missing", "", "missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyPolicy(t)
			file := filepath.Join(dir, filepath.FromSlash(RoutesModule))
			if c.content == "" {
				if err := os.Remove(file); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(file, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			e := newEngine(t, Options{Dir: dir})
			if e.Revision() != want {
				t.Errorf("revision %s, want the current set's %s", e.Revision(), want)
			}
			if got := routes(e); len(got) != len(tenancy.Routes()) {
				t.Errorf("data.fleet.authz.routes has %d routes, tenancy %d", len(got), len(tenancy.Routes()))
			}
			if st, err := RoutesFileState(dir); err != nil || st != c.state {
				t.Errorf("RoutesFileState: %q, %v; want %q", st, err, c.state)
			}
			var out strings.Builder
			if err := Check(ctx, Options{Dir: dir, Schema: ResourceList(testResources)}, &out); err != nil || !strings.Contains(out.String(), "routes file "+RoutesModule+": "+c.state) {
				t.Errorf("Check: %v\n%s", err, out.String())
			}
		})
	}
	// A bundle built with `opa build -b policy/rego` from the repository's
	// root names its modules policy/rego/...: its routes file is found.
	prefixed := map[string]string{}
	for name, src := range embeddedRego(t) {
		prefixed["policy/rego/"+name] = src
	}
	prefixed["policy/rego/"+RoutesModule] = "package fleet.api\n\nroutes := []\n"
	set, err := loadPolicySource(writeTemp(t, "p.tar.gz", buildBundle(t, prefixed, "p", "")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := set.routesFileState(); st != "out of date" || string(set.files["policy/rego/"+RoutesModule]) != string(RoutesSource()) {
		t.Errorf("bundle under policy/rego/: routes file %s, module %s", st, set.files["policy/rego/"+RoutesModule])
	}
	prefixed["other/"+RoutesModule] = string(RoutesSource())
	if _, err := loadPolicySource(writeTemp(t, "q.tar.gz", buildBundle(t, prefixed, "q", "")), nil); err == nil || !strings.Contains(err.Error(), "two routes files") {
		t.Errorf("a bundle with two routes files: %v", err)
	}
	dir := copyPolicy(t)
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(RoutesModule)), []byte("package fleet.routes\n\nroutes := []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RunTests(ctx, dir, io.Discard); err == nil || !strings.Contains(err.Error(), "must declare package fleet.api") {
		t.Errorf("a routes file of another package: %v", err)
	}
}
