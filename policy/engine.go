package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/rego/compile"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
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
	// DecisionLogLabels are added to the labels of every decision record
	// (DecisionRecord.Labels), e.g. fleetapi's own version; "id" and
	// "version" are the engine's and may not be set here.
	DecisionLogLabels map[string]string
	// TracerProvider makes the policy spans; nil uses the otel global.
	TracerProvider trace.TracerProvider
	// CacheSize bounds the answer cache: 0 means DefaultCacheSize, a
	// negative value turns the cache off.
	CacheSize int
	// Schema is what the engine knows of the data its scopes restrict
	// (storage.Schema): the tenant resources, each of which needs a scope
	// rule data.fleet.scope.<resource> while every scope rule (a rule of
	// data.fleet.scope that reads input.<its name>) needs a resource (New
	// fails on either mismatch), and the check that a scope can be
	// enforced, asked while a policy set is checked (Schema). nil: no
	// resources.
	Schema Schema
	// MeterProvider receives the cache counter
	// fleet.policy.cache{kind, result}, the decision counter, the reload
	// counter fleet.policy.reloads{result} and the gauge
	// fleetapi.policy.revision.info{revision}; nil uses the otel global.
	MeterProvider metric.MeterProvider
	// BundleURL is an HTTP(S) URL of an OPA bundle (FLEET_POLICY_BUNDLE)
	// fetched at start and polled by Watch with its ETag; it excludes Dir.
	// BundleVerification applies to it as to a bundle file.
	BundleURL string
	// HTTPClient fetches BundleURL; http.DefaultClient when nil.
	HTTPClient *http.Client
	// DirSettle is how long Dir (a directory or bundle file) must hold
	// still, unchanged in names and contents, before a set is loaded from
	// it, at start and on every reload whatever its trigger (loadStable):
	// 0 means DefaultDirSettle, a negative value no wait (the files are
	// still read until two reads agree).
	DirSettle time.Duration
	// BundleTimeout bounds each fetch of BundleURL, from the request to
	// the last byte of the body (FLEET_POLICY_BUNDLE_TIMEOUT;
	// DefaultBundleTimeout when 0): a fetch that takes longer fails, at
	// start (New fails) as on a poll (the set in force serves on).
	BundleTimeout time.Duration
	// BundleStaleAfter is how long the set in force may go unconfirmed by
	// BundleURL (a 304, the same bundle, or a new one swapped in) before
	// the engine reports it stale (Freshness, /readyz, the gauge
	// fleet.policy.stale); 0: never stale. serve sets it to
	// FLEET_POLICY_BUNDLE_STALE_POLLS poll intervals.
	BundleStaleAfter time.Duration
	// AllowRollback lets a bundle whose sequence is not above the one in
	// force replace it (FLEET_POLICY_ALLOW_ROLLBACK; logged as a
	// warning). Without it such a bundle is refused (bundleOrder).
	AllowRollback bool
	// MinBundleSequence refuses a bundle whose sequence is below it, at
	// start too (FLEET_POLICY_BUNDLE_MIN_SEQUENCE): the floor a replica
	// that has just started has no other way to know.
	MinBundleSequence int64
	// Logger receives the outcome of every reload (a refused set with the
	// reason); nil discards it.
	Logger *slog.Logger
}

// Engine answers the policy questions from the policy revision in force:
// a snapshot (one compiled, tested revision, its prepared queries and its
// answer cache) that Reload and LoadBundle replace atomically. A request
// pins the snapshot once (Pin) and every later answer for it comes from
// that one revision, so its decision and its scopes never mix two sets.
// It is safe for concurrent use.
type Engine struct {
	*shared
	cur atomic.Pointer[snapshot]
	// reloadMu serialises the check and swap of a new set (Reload, Watch);
	// a bundle URL is fetched and parsed without it (reloadURL).
	reloadMu sync.Mutex
	// seen is the fingerprint of Dir (sourceFingerprint) when the set in
	// force, or the last refused, was read; guarded by reloadMu.
	seen string
	// urlMu guards url, the state of a BundleURL source. It is never held
	// across network I/O or a build: a fetch takes no lock at all, and
	// reloadMu is taken only to check and swap a bundle received.
	urlMu sync.Mutex
	url   urlState
	// now is the clock of Freshness (time.Now; tests set it).
	now func() time.Time
	// reloads counts the new sets checked, by result (ok, refused).
	reloads metric.Int64Counter
}

// shared is what every snapshot of an Engine shares: the configuration,
// the telemetry and the decision log.
type shared struct {
	opts Options
	// resources are Options.Resources, in their order.
	resources []Resource
	// checkScope is Options.Schema's CheckScope (nil: none), asked by
	// verify only.
	checkScope func(Scope) error
	tracer     trace.Tracer
	logger     *slog.Logger
	// lookups counts cache lookups by kind (decide, scope, permissions)
	// and result (hit, miss), fleet.policy.cache; lookupSeries are its
	// series of the known kinds.
	lookups      *counts
	lookupSeries lookupSeries
	// decisions counts answers by code (ALLOW or the denial code) and
	// action, fleet.policy.decisions; allowed is its series of allowed
	// route decisions, most of them.
	decisions *counts
	allowed   *series

	logMu sync.Mutex
	log   io.Writer
	// labels are the labels of every decision record.
	labels map[string]string
}

// snapshot is one compiled, tested policy revision: its prepared queries
// and its answer cache (so a cached answer is of this revision alone). It
// is never modified once built, but for its cache.
type snapshot struct {
	*shared
	revision string
	set      *policySet
	compiler *ast.Compiler
	report   TestReport

	decideQ       rego.PreparedEvalQuery
	permissionsQ  rego.PreparedEvalQuery
	unrestrictedQ rego.PreparedEvalQuery
	scopeQ        map[Resource]*compile.Prepared
	// manageQ, manageUnrestrictedQ and manageScopeQ are package
	// fleet.manage's decision, unrestricted and scope rules (docs/design.md §9).
	manageQ             rego.PreparedEvalQuery
	manageUnrestrictedQ rego.PreparedEvalQuery
	manageScopeQ        *compile.Prepared

	cache *lruCache
}

// New loads the policy set, compiles it, prepares every query once,
// verifies that every scope rule translates for a principal of every
// account type, and runs the set's own Rego tests (a failing test stops
// it). The structural checks come first, so that a broken rule is named
// even when the tests that cover it fail too. The error names the step,
// and for a scope the rule and account type. Reload and LoadBundle check
// a new set the same way (buildSnapshot).
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Dir != "" && opts.BundleURL != "" {
		return nil, errors.New("policy: a directory or bundle file and a bundle URL: choose one")
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	mp := opts.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(tracerName)
	lookups, err := newCounts(meter, "fleet.policy.cache",
		"Policy answer cache lookups, by kind (decide, scope, permissions) and result (hit, miss).")
	if err != nil {
		return nil, err
	}
	decisions, err := newCounts(meter, "fleet.policy.decisions",
		"Policy decisions, by code (ALLOW or the denial code) and action (route for a route decision, else the management action).")
	if err != nil {
		return nil, err
	}
	reloads, err := meter.Int64Counter("fleet.policy.reloads",
		metric.WithDescription("New policy sets checked for a hot reload, by result (ok: swapped in, refused: a check failed, the old set serves on)."))
	if err != nil {
		return nil, err
	}
	labels, err := decisionLogLabels(opts.DecisionLogLabels)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		shared: &shared{
			opts:         opts,
			lookups:      lookups,
			lookupSeries: newLookupSeries(lookups),
			decisions:    decisions,
			allowed:      decisions.of(attribute.String("code", "ALLOW"), attribute.String("action", ActionRoute)),
			tracer:       tp.Tracer(tracerName),
			logger:       logger,
			log:          opts.DecisionLog,
			labels:       labels,
		},
		reloads: reloads,
		now:     time.Now,
	}
	if opts.Schema != nil {
		e.resources = slices.Clone(opts.Schema.Resources())
		e.checkScope = opts.Schema.CheckScope
	}
	var set *policySet
	if opts.BundleURL != "" {
		set, err = e.fetchFirst(ctx)
	} else if opts.Dir != "" {
		set, e.seen, err = e.loadStable(ctx)
	} else {
		set, err = loadPolicySource("", opts.BundleVerification)
	}
	if err == nil {
		err = e.bundleOrder(nil, set)
	}
	if err != nil {
		return nil, err
	}
	s, err := e.buildSnapshot(ctx, set)
	if err != nil {
		return nil, err
	}
	e.cur.Store(s)
	if err := e.freshnessGauges(meter); err != nil {
		return nil, err
	}
	_, err = meter.Int64ObservableGauge("fleetapi.policy.revision.info",
		metric.WithDescription("The policy revision in force: 1 for its revision, no other series."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(1, metric.WithAttributes(attribute.String("revision", e.Revision())))
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return e, nil
}

// buildSnapshot compiles set and checks it as New does: the scope rules
// match the resources, every query prepares, every scope rule translates
// for a principal of every account type, and the set's own tests pass.
func (e *Engine) buildSnapshot(ctx context.Context, set *policySet) (*snapshot, error) {
	c := ast.NewCompiler().WithDefaultRegoVersion(ast.RegoV1)
	if c.Compile(set.modules); c.Failed() {
		return nil, fmt.Errorf("compile policy: %w", c.Errors)
	}
	s := &snapshot{
		shared:   e.shared,
		revision: set.revision(),
		set:      set,
		compiler: c,
		cache:    newLRUCache(e.opts.CacheSize),
		scopeQ:   map[Resource]*compile.Prepared{},
	}
	if err := checkScopeRules(set, c, s.resources); err != nil {
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	if err := s.verify(ctx); err != nil {
		return nil, err
	}
	var err error
	if s.report, err = runTests(ctx, set, io.Discard); err != nil {
		return nil, fmt.Errorf("policy tests: %w", err)
	}
	return s, nil
}

// snapshotKey is the context key of a pinned snapshot.
type snapshotKey struct{}

// Pin returns ctx with the revision now in force pinned: every answer the
// engine gives for ctx (or a context derived from it) comes from that
// revision, whatever reload happens meanwhile. A ctx already pinned by
// this engine is returned as it is.
func (e *Engine) Pin(ctx context.Context) context.Context {
	if s, ok := ctx.Value(snapshotKey{}).(*snapshot); ok && s.shared == e.shared {
		return ctx
	}
	return context.WithValue(ctx, snapshotKey{}, e.cur.Load())
}

// snap returns the snapshot pinned in ctx by this engine, or the one in
// force.
func (e *Engine) snap(ctx context.Context) *snapshot {
	if s, ok := ctx.Value(snapshotKey{}).(*snapshot); ok && s.shared == e.shared {
		return s
	}
	return e.cur.Load()
}

// Revision returns the revision in force: the hex SHA-256 of the policy
// files (names and contents, in name order), prefixed with the bundle's
// manifest revision and "@" for a bundle that has one. It names the policy
// in the decision log, /readyz, fleetapi_policy_revision_info and the
// cache keys.
func (e *Engine) Revision() string { return e.cur.Load().revision }

// PinnedRevision returns the revision pinned in ctx (Pin), or the one in
// force.
func (e *Engine) PinnedRevision(ctx context.Context) string { return e.snap(ctx).revision }

// TestReport is the result of the own tests of the policy set in force,
// run when it was loaded.
func (e *Engine) TestReport() TestReport { return e.cur.Load().report }

// Decide evaluates data.fleet.authz.decision for in with the revision
// pinned in ctx (or in force); see snapshot.Decide.
func (e *Engine) Decide(ctx context.Context, in Input) (Decision, error) {
	return e.snap(ctx).Decide(ctx, in)
}

// Permissions evaluates data.fleet.authz.permissions for in with the
// revision pinned in ctx (or in force); see snapshot.Permissions.
func (e *Engine) Permissions(ctx context.Context, in Input) (Permissions, error) {
	return e.snap(ctx).Permissions(ctx, in)
}

// Scope compiles the row scope of resource for the account of in with the
// revision pinned in ctx (or in force); see snapshot.Scope.
func (e *Engine) Scope(ctx context.Context, in Input, resource Resource) (Scope, error) {
	return e.snap(ctx).Scope(ctx, in, resource)
}

// ManagementScope compiles the management scope for the account of in
// with the revision pinned in ctx (or in force); see
// snapshot.ManagementScope.
func (e *Engine) ManagementScope(ctx context.Context, in Input) (Scope, error) {
	return e.snap(ctx).ManagementScope(ctx, in)
}

// DecideManagement evaluates data.fleet.manage.decision for in with the
// revision pinned in ctx (or in force); see snapshot.DecideManagement.
func (e *Engine) DecideManagement(ctx context.Context, in ManagementInput) (Decision, error) {
	return e.snap(ctx).DecideManagement(ctx, in)
}

// Explain evaluates the decision for in with a trace, with the revision
// pinned in ctx (or in force); see snapshot.Explain.
func (e *Engine) Explain(ctx context.Context, in Input) (Explanation, error) {
	return e.snap(ctx).Explain(ctx, in)
}

// ExplainManagement evaluates the management decision for in with a
// trace, with the revision pinned in ctx (or in force); see
// snapshot.ExplainManagement.
func (e *Engine) ExplainManagement(ctx context.Context, in ManagementInput) (ManagementExplanation, error) {
	return e.snap(ctx).ExplainManagement(ctx, in)
}

// PrepareRule prepares rule (a reference such as
// "data.fleet.scope.reports") of the revision pinned in ctx (or in force)
// for evaluation on an input document the caller builds (Input.Document
// and more): for tools that ask the set other questions than the request
// path does (tooling/oracle evaluates scope rules on known rows). The
// request path never uses it.
func (e *Engine) PrepareRule(ctx context.Context, rule string) (rego.PreparedEvalQuery, error) {
	ref, err := ast.ParseRef(rule)
	if err != nil {
		return rego.PreparedEvalQuery{}, fmt.Errorf("prepare %s: %w", rule, err)
	}
	return e.snap(ctx).prepareEval(ctx, ref.String())
}

func (e *snapshot) prepare(ctx context.Context) error {
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
// (Options.Schema), in their order.
func (e *shared) Resources() []Resource { return slices.Clone(e.resources) }

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

func (e *snapshot) prepareEval(ctx context.Context, query string) (rego.PreparedEvalQuery, error) {
	q, err := rego.New(
		rego.Compiler(e.compiler),
		rego.ParsedQuery(ast.MustParseBody(query)),
	).PrepareForEval(ctx)
	if err != nil {
		return q, fmt.Errorf("prepare %s: %w", query, err)
	}
	return q, nil
}
