package policy

import (
	"context"
	"io"
	"maps"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Set is a policy set read and parsed as the one-shot commands read it
// (policy test, --mutate): its policy modules, the generated RoutesModule
// among them, and its test modules. It is for tools that work on the
// set's modules rather than ask it the request path's questions
// (tooling/mutation).
type Set struct {
	set *policySet
}

// ReadSet reads the policy set in dir: "" is the embedded set, a directory
// is read until two reads in a row agree (names and contents), a regular
// file is an OPA bundle (without signature verification). Its modules are
// parsed as Rego v1.
func ReadSet(dir string) (*Set, error) {
	set, err := loadPolicySet(dir)
	if err != nil {
		return nil, err
	}
	return &Set{set}, nil
}

// Modules returns the policy modules of the set by name (slash-separated,
// relative to the set; RoutesModule for the generated one), test modules
// excluded. The map is a copy; the modules are the set's own and must not
// be modified.
func (s *Set) Modules() map[string]*ast.Module { return maps.Clone(s.set.modules) }

// Tests returns the test modules (*_test.rego) of the set by name. The map
// is a copy; the modules are the set's own and must not be modified.
func (s *Set) Tests() map[string]*ast.Module { return maps.Clone(s.set.tests) }

// RunTests runs the set's tests as RunTests does.
func (s *Set) RunTests(ctx context.Context, w io.Writer) (TestReport, error) {
	return runTests(ctx, s.set, w)
}
