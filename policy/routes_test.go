package policy

import (
	"context"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/fleetapi/fleetapi/tenancy"
)

// TestRegoRoutesAreTheAPIRoutes: data.fleet.authz.routes, on which GET
// /me reports the effective permissions, lists exactly tenancy.Routes(),
// the routes the permission grammar accepts (and the api registers): the
// policy reads them from the module generated from tenancy.Routes()
// (routesModule), and a policy that listed its own would fail here.
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
