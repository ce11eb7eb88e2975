// Package mutation tests the tests of a policy set: it applies
// single-point mutations to the set's Rego modules (OPA's parser and
// printer), runs the set's own tests against each mutant and reports the
// mutants that no test kills (`fleetapi policy test --mutate`). It is
// tooling: the request path never imports it
// (cmd/fleetapi/layout_test.go).
package mutation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/fleetapi/fleetapi/policy"
)

// ErrSurvivors is returned by Run when a mutant that is not marked as
// equivalent survives the set's tests.
var ErrSurvivors = errors.New("surviving mutants")

// The kinds of mutation Run applies, one at a time.
const (
	NegateComparison = "negate-comparison" // == ↔ !=, < ↔ >=, > ↔ <=
	DeleteExpr       = "delete-expr"       // one expression of a body of two or more removed
	SwapString       = "swap-string"       // a string literal replaced by another of its kind
	SwapRef          = "swap-ref"          // a.b.x replaced by a sibling a.b.y seen in the set
	ToggleNot        = "toggle-not"        // `not` added to or removed from an expression
	BodyTrue         = "body-true"         // a rule's body replaced by `true` (always applies)
	BodyFalse        = "body-false"        // a rule's body replaced by `false` (never applies: undefined, or its else/default)
)

// Mutant is one single-point mutation of a policy module.
type Mutant struct {
	// ID names the mutant across runs and edits elsewhere in the file: a
	// hash of the file, the kind, the original and mutated text and the
	// ordinal among identical ones. An equivalence marker names it.
	ID   string `json:"id"`
	File string `json:"file"`
	Line int    `json:"line"`
	// Rule is the name of the rule mutated (its head's reference, such as
	// "reports" or "granted"): what a reader or a test names a mutant by,
	// where the line moves with every rule added above it.
	Rule string `json:"rule"`
	Kind string `json:"kind"`
	// Original is the source of the expression (or rule) mutated;
	// Mutation says what changed, Mutated is the mutated expression as
	// format.Ast prints it.
	Original string `json:"original"`
	Mutation string `json:"mutation"`
	Mutated  string `json:"mutated"`
	// Outcome is "killed" (a test failed), "compile-error" (the set no
	// longer compiles), "survived" or "equivalent" (survived and marked).
	Outcome string `json:"outcome"`
	// KilledBy names the first failing test; Reason is the equivalence
	// marker's justification or the compile error.
	KilledBy string `json:"killed_by,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Report is the outcome of Run.
type Report struct {
	Mutants []Mutant `json:"mutants"`
	// Killed, CompileErrors, Survived and Equivalent count the mutants by
	// outcome. Compile errors are not kills: a mutant the compiler refuses
	// says nothing about the tests.
	Killed        int `json:"killed"`
	CompileErrors int `json:"compile_errors"`
	Survived      int `json:"survived"`
	Equivalent    int `json:"equivalent"`
	// Score is Killed / (Killed + Survived), in percent: the mutants that
	// compiled and are not marked equivalent.
	Score    float64       `json:"score"`
	Duration time.Duration `json:"duration_ns"`
	Workers  int           `json:"workers"`
}

// Options configure Run.
type Options struct {
	// Workers run mutants in parallel; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, receives a line per finished mutant count now
	// and then.
	Progress io.Writer
	// Files, when not empty, limits the mutations to these policy modules
	// (paths relative to the set, as the report names them); the set's
	// tests all still run against each mutant.
	Files []string
}

// Run applies single-point mutations to the policy modules of dir (""
// = the embedded set; the generated routes module and the tests are not
// mutated) with OPA's parser and printer, runs the set's own Rego tests
// against each mutant on opts.Workers workers, and reports each mutant's
// outcome and the score to w. A mutant is killed when a test fails; a
// mutant the compiler refuses is counted apart. A surviving mutant marked
// in its module by a comment "# mutation: equivalent <id> <why>" is
// equivalent; a marker without a justification, or naming no mutant, is
// an error. The error wraps ErrSurvivors when an unmarked mutant
// survives, ErrTestsFailed when the unmutated set fails its tests.
func Run(ctx context.Context, dir string, opts Options, w io.Writer) (Report, error) {
	start := time.Now()
	set, err := policy.ReadSet(dir)
	if err != nil {
		return Report{}, err
	}
	if _, err := set.RunTests(ctx, io.Discard); err != nil {
		return Report{}, fmt.Errorf("the unmutated set: %w", err)
	}
	modules := set.Modules()
	for _, f := range opts.Files {
		if _, ok := modules[f]; !ok || policy.IsRoutesModule(f) {
			return Report{}, fmt.Errorf("no policy module %q in %s", f, sourceName(dir))
		}
	}
	equivalents, err := equivalentMarkers(modules, opts.Files)
	if err != nil {
		return Report{}, err
	}
	kinds := stringKinds(modules)
	refs := refKinds(modules)
	relevant := relevantModules(modules, set.Tests())
	type job struct {
		m   Mutant
		mod *ast.Module
		err error
	}
	var jobs []job
	for _, name := range slices.Sorted(maps.Keys(modules)) {
		if policy.IsRoutesModule(name) || len(opts.Files) > 0 && !slices.Contains(opts.Files, name) {
			continue
		}
		orig := modules[name]
		n := len(mutationSites(orig, kinds, refs))
		seen := map[string]int{}
		for i := range n {
			m, mod, err := applyMutation(orig, i, kinds, refs)
			key := m.Kind + "\x00" + m.Original + "\x00" + m.Mutated
			h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", name, key, seen[key]))
			seen[key]++
			m.ID = hex.EncodeToString(h[:6])
			m.File = name
			jobs = append(jobs, job{m, mod, err})
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rep := Report{Mutants: make([]Mutant, len(jobs)), Workers: workers}
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range workers {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				m := j.m
				if j.err != nil {
					m.Outcome, m.Reason = "compile-error", j.err.Error()
				} else {
					m.Outcome, m.KilledBy, m.Reason = runMutant(ctx, relevant[j.m.File], j.m.File, j.mod)
				}
				rep.Mutants[i] = m
				mu.Lock()
				done++
				if opts.Progress != nil && done%50 == 0 {
					fmt.Fprintf(opts.Progress, "mutants: %d of %d run\n", done, len(jobs))
				}
				mu.Unlock()
			}
		})
	}
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	used := map[string]bool{}
	for i := range rep.Mutants {
		m := &rep.Mutants[i]
		if m.Outcome == "survived" {
			if why, ok := equivalents[m.ID]; ok {
				m.Outcome, m.Reason = "equivalent", why
				used[m.ID] = true
			}
		}
		switch m.Outcome {
		case "killed":
			rep.Killed++
		case "compile-error":
			rep.CompileErrors++
		case "survived":
			rep.Survived++
		case "equivalent":
			rep.Equivalent++
		}
	}
	if rep.Killed+rep.Survived > 0 {
		rep.Score = 100 * float64(rep.Killed) / float64(rep.Killed+rep.Survived)
	}
	rep.Duration = time.Since(start)
	rep.write(w)
	var stale []string
	for id := range equivalents {
		if !used[id] {
			stale = append(stale, id)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return rep, fmt.Errorf("equivalence markers name no surviving mutant (stale, or the mutant is killed now): %s", strings.Join(stale, ", "))
	}
	if rep.Survived > 0 {
		return rep, fmt.Errorf("%w: %d not marked as equivalent", ErrSurvivors, rep.Survived)
	}
	return rep, nil
}

// relevantModules returns, for each policy module, the modules a mutant
// of it is tested with: the test modules that reach its package through
// their references (imports included), directly or through other policy
// modules, and the policy modules those reach. Tests that cannot see the
// module cannot kill its mutants, and compiling and running them would
// only take time.
func relevantModules(modules, tests map[string]*ast.Module) map[string]map[string]*ast.Module {
	all := maps.Clone(modules)
	maps.Copy(all, tests)
	pkgOf := map[string]string{}
	for name, m := range all {
		pkgOf[name] = m.Package.Path.String()
	}
	refsOf := map[string]map[string]bool{}
	for name, m := range all {
		refsOf[name] = map[string]bool{}
		ast.WalkRefs(m, func(r ast.Ref) bool {
			for other, pkg := range pkgOf {
				if other != name && strings.HasPrefix(r.String()+".", pkg+".") {
					refsOf[name][other] = true
				}
			}
			return false
		})
	}
	reach := func(start string) map[string]bool {
		seen := map[string]bool{start: true}
		todo := []string{start}
		for len(todo) > 0 {
			n := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			for o := range refsOf[n] {
				if !seen[o] {
					seen[o] = true
					todo = append(todo, o)
				}
			}
		}
		return seen
	}
	out := map[string]map[string]*ast.Module{}
	for name := range modules {
		mods := map[string]*ast.Module{}
		for tn := range tests {
			r := reach(tn)
			if !r[name] {
				continue
			}
			for n := range r {
				mods[n] = all[n]
			}
		}
		out[name] = mods
	}
	return out
}

// runMutant runs the tests that reach the module file (relevant) with it
// replaced by mod, stopping at the first failure.
func runMutant(ctx context.Context, relevant map[string]*ast.Module, file string, mod *ast.Module) (outcome, killedBy, reason string) {
	all := maps.Clone(relevant)
	all[file] = mod
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetModules(all).
		RunTests(ctx, nil)
	if err != nil {
		return "compile-error", "", firstLine(err.Error())
	}
	outcome = "survived"
	for r := range ch {
		if outcome == "survived" && !r.Pass() {
			outcome, killedBy = "killed", r.Package+"."+r.Name
			cancel()
		}
	}
	return outcome, killedBy, ""
}

// sourceName names the set of dir in messages.
func sourceName(dir string) string {
	if dir == "" {
		return "embedded policy"
	}
	return dir
}

// firstLine is the first line of s.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
