package policy

import (
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetapi/fleetapi/tenancy"
)

// RoutesModule is the name, in a policy set, of the module of the API
// routes (package fleet.api, data.fleet.api.routes): the file a policy
// directory carries for OPA's own tools (`fleetapi policy routes --write`),
// relative to the directory.
const RoutesModule = "fleet/api/routes.rego"

// RoutesSource is the Rego source of package fleet.api, generated from
// tenancy.Routes(): routes lists every route of the client API as
// "METHOD /template". data.fleet.authz.permissions (GET /me) reports on
// these, so a route is declared once, in tenancy, and the policy cannot
// forget one. The source is `opa fmt` clean; it is the content of
// RoutesModule in a policy directory, so that `opa test`, `opa check` and
// `opa build` see the routes fleetapi evaluates.
func RoutesSource() []byte {
	var b strings.Builder
	b.WriteString("# Generated from tenancy.Routes() by `fleetapi policy routes --write`: do not edit.\n")
	b.WriteString("# fleetapi evaluates its own routes in place of this file's; OPA's tools read it.\n")
	b.WriteString("package fleet.api\n\nroutes := [\n")
	for _, r := range tenancy.Routes() {
		fmt.Fprintf(&b, "\t%q,\n", r.String())
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// IsRoutesModule reports whether the module name of a set is its routes
// module: RoutesModule, or a path ending in /RoutesModule (a bundle built
// with `opa build -b policy/rego` from the repository's root names its
// modules policy/rego/...). Its content is always RoutesSource.
func IsRoutesModule(name string) bool {
	return name == RoutesModule || strings.HasSuffix(name, "/"+RoutesModule)
}

// setRoutesModule puts the generated fleet.api module into the set under
// name (RoutesModule, or the name of the set's routes file), among its
// files (so the revision covers it) and its modules, in place of the
// set's own file when it has one: the routes fleetapi evaluates are
// always its own (tenancy.Routes()), whatever the file says. routesFile
// keeps what the set's file held (nil: no file), for Check to say whether
// it is current.
func (s *policySet) setRoutesModule(name string) error {
	src := RoutesSource()
	mod, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return fmt.Errorf("generated routes module: %w", err)
	}
	if own, ok := s.files[name]; ok {
		s.routesFile = own
	}
	s.files[name] = src
	s.modules[name] = mod
	return nil
}

// RoutesFileState says how the routes file of the policy set in dir ("" =
// the embedded set) compares with RoutesSource: "current", "missing" or
// "out of date".
func RoutesFileState(dir string) (string, error) {
	set, err := loadPolicySet(dir)
	if err != nil {
		return "", err
	}
	return set.routesFileState(), nil
}

func (s *policySet) routesFileState() string {
	switch {
	case s.routesFile == nil:
		return "missing"
	case string(s.routesFile) != string(RoutesSource()):
		return "out of date"
	}
	return "current"
}
