package policy

import (
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetapi/fleetapi/tenancy"
)

// RoutesModule is the name of the generated module in a policy set:
// not a file of the directory (a path there never holds a colon).
const RoutesModule = "generated:fleet/api/routes.rego"

// routesModule is the Rego source of package fleet.api, generated from
// tenancy.Routes(): routes lists every route of the client API as
// "METHOD /template". data.fleet.authz.permissions (GET /me) reports on
// these, so a route is declared once, in tenancy, and the policy cannot
// forget one.
func routesModule() []byte {
	var b strings.Builder
	b.WriteString("# Generated from tenancy.Routes() by package policy; not a file.\npackage fleet.api\n\nroutes := [\n")
	for _, r := range tenancy.Routes() {
		fmt.Fprintf(&b, "\t%q,\n", r.String())
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// addRoutesModule adds the generated fleet.api module to the set, among
// its files (so the revision covers it) and its modules.
func (s *policySet) addRoutesModule() error {
	src := routesModule()
	mod, err := ast.ParseModuleWithOpts(RoutesModule, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return fmt.Errorf("generated routes module: %w", err)
	}
	s.files[RoutesModule] = src
	s.modules[RoutesModule] = mod
	return nil
}
