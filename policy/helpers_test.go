package policy

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
)

// sharedEngine is built once: New runs the Rego tests and compiles every
// query, which takes a moment.
var sharedEngine = sync.OnceValues(func() (*Engine, error) {
	return New(context.Background(), Options{Schema: ResourceList(testResources)})
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
	if opts.Schema == nil {
		opts.Schema = ResourceList(testResources)
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
		Account: AccountInput{ID: 7, Type: typ, ManagerID: 3, Active: true, Privileges: privileges, ChainComplete: true},
	}
}

func (in Input) at(method, route string) Input {
	in.Request = RequestInput{Method: method, Route: route}
	return in
}

// schemaMatcher reads the JSON Schema at path (relative to the package:
// schemas/input.json) and returns it as a document, with a function that matches a value
// (through its JSON form) against it with Rego's json.match_schema: whether
// it matches, and the errors.
func schemaMatcher(t *testing.T, path string) (map[string]any, func(any) (bool, any)) {
	t.Helper()
	schema, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(schema, &doc); err != nil {
		t.Fatal(err)
	}
	q, err := rego.New(rego.Query("x := json.match_schema(input.doc, input.schema)")).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return doc, func(v any) (bool, any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var generic any
		if err := json.Unmarshal(b, &generic); err != nil {
			t.Fatal(err)
		}
		rs, err := q.Eval(context.Background(), rego.EvalInput(map[string]any{"doc": generic, "schema": string(schema)}))
		if err != nil || len(rs) != 1 {
			t.Fatalf("match_schema: %v %v", rs, err)
		}
		res := rs[0].Bindings["x"].([]any)
		return res[0].(bool), res[1]
	}
}
