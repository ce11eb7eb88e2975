package policy

import (
	"context"
	"sync"
	"testing"
)

// sharedEngine is built once: New runs the Rego tests and compiles every
// query, which takes a moment.
var sharedEngine = sync.OnceValues(func() (*Engine, error) {
	return New(context.Background(), Options{Resources: testResources})
})

// testResources are the resources of the embedded policy's scope rules,
// read from the rules themselves (in source order), so that no test list
// can miss one. Package policy cannot import storage, which declares the
// resources; the external test TestScopeRulesAreStorageResources checks
// that the two agree.
var testResources = func() []Resource {
	set, err := loadPolicySet("")
	if err != nil {
		panic(err)
	}
	var out []Resource
	for _, r := range scopeRules(set) {
		out = append(out, r.resource)
	}
	return out
}()

func engine(t testing.TB) *Engine {
	t.Helper()
	e, err := sharedEngine()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func newEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	if opts.Resources == nil {
		opts.Resources = testResources
	}
	e, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// principal is an active, writable account of type typ (id 7, manager 3)
// whose token grants everything.
func principal(typ string, privileges ...string) Input {
	if privileges == nil {
		privileges = []string{}
	}
	return Input{
		Request: RequestInput{Method: "GET", Route: "/services"},
		Token:   TokenInput{ID: 11, Permissions: []string{"*"}},
		Account: AccountInput{ID: 7, Type: typ, ManagerID: 3, Active: true, Privileges: privileges},
	}
}

func (in Input) at(method, route string) Input {
	in.Request = RequestInput{Method: method, Route: route}
	return in
}
