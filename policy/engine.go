package policy

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/rego/compile"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the policy spans.
const tracerName = "github.com/fleetapi/fleetapi/policy"

// DefaultCacheSize is the number of answers the Engine keeps when
// Options.CacheSize is 0.
const DefaultCacheSize = 10000

// Options configure New.
type Options struct {
	// Dir is a policy directory (FLEET_POLICY_DIR) or an OPA bundle file
	// (FLEET_POLICY_BUNDLE, `opa build` output) that replaces the embedded
	// set; "" uses the embedded policy/rego.
	Dir string
	// BundleVerification, when set, is the key an OPA bundle's signature
	// must verify against (FLEET_POLICY_BUNDLE_KEY): a bundle without a
	// valid .signatures.json is refused. It needs Dir to be a bundle file.
	BundleVerification *BundleVerification
	// DecisionLog receives one JSON line per Decide; nil turns the log off.
	DecisionLog io.Writer
	// TracerProvider makes the policy spans; nil uses the otel global.
	TracerProvider trace.TracerProvider
	// CacheSize bounds the answer cache: 0 means DefaultCacheSize, a
	// negative value turns the cache off.
	CacheSize int
	// Resources are the tenant resources (storage.Resources). Each needs a
	// scope rule data.fleet.scope.<resource>, and every scope rule (a rule
	// of data.fleet.scope that reads input.<its name>) needs a resource:
	// New fails on either mismatch.
	Resources []Resource
	// CompileScope, when set, compiles every Scope the engine makes into
	// the form its user queries with (storage passes its SQL translator,
	// storage.CompileScope). It runs once per compiled scope, on a cache
	// miss; the result is kept in the Scope (Scope.Compiled) and cached
	// with it. A scope it rejects is an error wrapping ErrScope.
	CompileScope func(Scope) (any, error)
	// MeterProvider receives the cache counter
	// fleet.policy.cache{kind, result}; nil uses the otel global.
	MeterProvider metric.MeterProvider
}

// Engine holds one compiled, tested policy revision and its prepared
// queries. It is safe for concurrent use.
type Engine struct {
	revision string
	set      *policySet
	compiler *ast.Compiler
	report   TestReport

	decideQ       rego.PreparedEvalQuery
	permissionsQ  rego.PreparedEvalQuery
	unrestrictedQ rego.PreparedEvalQuery
	scopeQ        map[Resource]*compile.Prepared
	// manageQ, manageUnrestrictedQ and manageScopeQ are package
	// fleet.manage's decision, unrestricted and scope rules (DESIGN §9).
	manageQ             rego.PreparedEvalQuery
	manageUnrestrictedQ rego.PreparedEvalQuery
	manageScopeQ        *compile.Prepared
	// resources are Options.Resources, in their order.
	resources []Resource

	cache   *lruCache
	compile func(Scope) (any, error)
	tracer  trace.Tracer
	// lookups counts cache lookups by kind (decide, scope, permissions)
	// and result (hit, miss).
	lookups metric.Int64Counter
	// decisions counts Decide answers by code (ALLOW or the denial code).
	decisions metric.Int64Counter

	logMu sync.Mutex
	log   io.Writer
}

// New loads the policy set, compiles it, prepares every query once,
// verifies that every scope rule translates for a principal of every
// account type, and runs the set's own Rego tests (a failing test stops
// it). The structural checks come first, so that a broken rule is named
// even when the tests that cover it fail too. The error names the step,
// and for a scope the rule and account type.
func New(ctx context.Context, opts Options) (*Engine, error) {
	set, err := loadPolicySource(opts.Dir, opts.BundleVerification)
	if err != nil {
		return nil, err
	}
	c := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if c.Compile(set.modules); c.Failed() {
		return nil, fmt.Errorf("compile policy: %w", c.Errors)
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	mp := opts.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	lookups, err := mp.Meter(tracerName).Int64Counter("fleet.policy.cache",
		metric.WithDescription("Policy answer cache lookups, by kind (decide, scope, permissions) and result (hit, miss)."))
	if err != nil {
		return nil, err
	}
	decisions, err := mp.Meter(tracerName).Int64Counter("fleet.policy.decisions",
		metric.WithDescription("Policy decisions, by code (ALLOW or the denial code)."))
	if err != nil {
		return nil, err
	}
	e := &Engine{
		lookups:   lookups,
		decisions: decisions,
		revision:  set.revision(),
		set:       set,
		compiler:  c,
		cache:     newLRUCache(opts.CacheSize),
		compile:   opts.CompileScope,
		tracer:    tp.Tracer(tracerName),
		log:       opts.DecisionLog,
		scopeQ:    map[Resource]*compile.Prepared{},
		resources: slices.Clone(opts.Resources),
	}
	if err := checkScopeRules(set, c, e.resources); err != nil {
		return nil, err
	}
	if err := e.prepare(ctx); err != nil {
		return nil, err
	}
	if err := e.verify(ctx); err != nil {
		return nil, err
	}
	if e.report, err = runTests(ctx, set, io.Discard); err != nil {
		return nil, fmt.Errorf("policy tests: %w", err)
	}
	return e, nil
}

// Revision is the hex SHA-256 of the policy files (names and contents, in
// name order). It names the policy in the decision log and cache keys.
func (e *Engine) Revision() string { return e.revision }

// TestReport is the result of the policy set's own tests, run by New.
func (e *Engine) TestReport() TestReport { return e.report }

func (e *Engine) prepare(ctx context.Context) error {
	var err error
	if e.decideQ, err = e.prepareEval(ctx, "data.fleet.authz.decision"); err != nil {
		return err
	}
	if e.permissionsQ, err = e.prepareEval(ctx, "data.fleet.authz.permissions"); err != nil {
		return err
	}
	if e.unrestrictedQ, err = e.prepareEval(ctx, "data.fleet.scope.unrestricted"); err != nil {
		return err
	}
	for _, r := range e.resources {
		prep, err := compile.New(
			compile.Target("ucast", "all"),
			compile.ParsedUnknowns(ast.MustParseTerm("input."+string(r))),
			compile.ParsedQuery(ast.MustParseBody("data.fleet.scope."+string(r))),
			compile.Rego(rego.Compiler(e.compiler)),
		).Prepare(ctx)
		if err != nil {
			return fmt.Errorf("prepare scope rule %q: %w", r, err)
		}
		e.scopeQ[r] = prep
	}
	return e.prepareManagement(ctx)
}

// Resources returns the tenant resources the engine was built with
// (Options.Resources), in their order.
func (e *Engine) Resources() []Resource { return slices.Clone(e.resources) }

// checkScopeRules checks that the scope rules of the set and the resources
// are the same names: each resource has a rule data.fleet.scope.<name>,
// and each rule of package fleet.scope that reads input.<its own name> (a
// scope rule, as opposed to helpers such as unrestricted) is a resource.
// Either side forgotten is an error naming it.
func checkScopeRules(set *policySet, c *ast.Compiler, resources []Resource) error {
	known := map[Resource]bool{}
	for _, r := range resources {
		if !isIdentifier(string(r)) {
			return fmt.Errorf("resource %q: not a plain rule name", r)
		}
		if known[r] {
			return fmt.Errorf("resource %q listed twice", r)
		}
		known[r] = true
		if len(c.GetRulesExact(ast.MustParseRef("data.fleet.scope."+string(r)))) == 0 {
			return fmt.Errorf("resource %q has no scope rule data.fleet.scope.%s", r, r)
		}
	}
	for _, rule := range scopeRules(set) {
		if !known[rule.resource] {
			return fmt.Errorf("scope rule data.fleet.scope.%s (%s) is not a resource: storage declares no resource %q", rule.resource, rule.module, rule.resource)
		}
	}
	return nil
}

// scopeRule is a scope rule of a policy set: a rule of package fleet.scope
// that reads input.<its own name> (as opposed to helpers such as
// unrestricted), and the module that holds it.
type scopeRule struct {
	resource Resource
	module   string
}

// scopeRules returns the scope rules of the set, once each, in module name
// and then source order.
func scopeRules(set *policySet) []scopeRule {
	var out []scopeRule
	seen := map[Resource]bool{}
	scopePkg := ast.MustParseRef("data.fleet.scope")
	for _, name := range slices.Sorted(maps.Keys(set.modules)) {
		m := set.modules[name]
		if !m.Package.Path.Equal(scopePkg) {
			continue
		}
		for _, rule := range m.Rules {
			r := Resource(rule.Head.Name.String())
			reads := false
			ast.WalkRefs(rule.Body, func(ref ast.Ref) bool {
				if len(ref) > 1 && ref[0].Equal(ast.InputRootDocument) && ref[1].Equal(ast.StringTerm(string(r))) {
					reads = true
				}
				return reads
			})
			if reads && !seen[r] {
				seen[r] = true
				out = append(out, scopeRule{r, name})
			}
		}
	}
	return out
}

func (e *Engine) prepareEval(ctx context.Context, query string) (rego.PreparedEvalQuery, error) {
	q, err := rego.New(
		rego.Compiler(e.compiler),
		rego.ParsedQuery(ast.MustParseBody(query)),
	).PrepareForEval(ctx)
	if err != nil {
		return q, fmt.Errorf("prepare %s: %w", query, err)
	}
	return q, nil
}
