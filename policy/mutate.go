package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/tester"
)

// ErrSurvivors is returned by Mutate when a mutant that is not marked as
// equivalent survives the set's tests.
var ErrSurvivors = errors.New("surviving mutants")

// The kinds of mutation Mutate applies, one at a time.
const (
	MutNegateComparison = "negate-comparison" // == ↔ !=, < ↔ >=, > ↔ <=
	MutDeleteExpr       = "delete-expr"       // one expression of a body of two or more removed
	MutSwapString       = "swap-string"       // a string literal replaced by another of its kind
	MutSwapRef          = "swap-ref"          // a.b.x replaced by a sibling a.b.y seen in the set
	MutToggleNot        = "toggle-not"        // `not` added to or removed from an expression
	MutBodyTrue         = "body-true"         // a rule's body replaced by `true` (always applies)
	MutBodyFalse        = "body-false"        // a rule's body replaced by `false` (never applies: undefined, or its else/default)
)

// Mutant is one single-point mutation of a policy module.
type Mutant struct {
	// ID names the mutant across runs and edits elsewhere in the file: a
	// hash of the file, the kind, the original and mutated text and the
	// ordinal among identical ones. An equivalence marker names it.
	ID   string `json:"id"`
	File string `json:"file"`
	Line int    `json:"line"`
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

// MutationReport is the outcome of Mutate.
type MutationReport struct {
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

// MutateOptions configure Mutate.
type MutateOptions struct {
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

// equivalentMarker is an equivalence marker, a comment in the module
// whose mutant it names: "# mutation: equivalent <id> <justification>".
var equivalentMarker = regexp.MustCompile(`^#\s*mutation:\s*equivalent\s+([0-9a-f]{12})\b\s*[:\-—]?\s*(.*)$`)

// Mutate applies single-point mutations to the policy modules of dir (""
// = the embedded set; the generated routes module and the tests are not
// mutated) with OPA's parser and printer, runs the set's own Rego tests
// against each mutant on opts.Workers workers, and reports each mutant's
// outcome and the score to w. A mutant is killed when a test fails; a
// mutant the compiler refuses is counted apart. A surviving mutant marked
// in its module by a comment "# mutation: equivalent <id> <why>" is
// equivalent; a marker without a justification, or naming no mutant, is
// an error. The error wraps ErrSurvivors when an unmarked mutant
// survives, ErrTestsFailed when the unmutated set fails its tests.
func Mutate(ctx context.Context, dir string, opts MutateOptions, w io.Writer) (MutationReport, error) {
	start := time.Now()
	set, err := loadPolicySet(dir)
	if err != nil {
		return MutationReport{}, err
	}
	if _, err := runTests(ctx, set, io.Discard); err != nil {
		return MutationReport{}, fmt.Errorf("the unmutated set: %w", err)
	}
	for _, f := range opts.Files {
		if _, ok := set.modules[f]; !ok || f == routesModuleName {
			return MutationReport{}, fmt.Errorf("no policy module %q in %s", f, dirName(dir))
		}
	}
	equivalents, err := equivalentMarkers(set, opts.Files)
	if err != nil {
		return MutationReport{}, err
	}
	kinds := stringKinds(set)
	refs := refKinds(set)
	relevant := relevantModules(set)
	type job struct {
		m   Mutant
		mod *ast.Module
		err error
	}
	var jobs []job
	for _, name := range slices.Sorted(maps.Keys(set.modules)) {
		if name == routesModuleName || len(opts.Files) > 0 && !slices.Contains(opts.Files, name) {
			continue
		}
		orig := set.modules[name]
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
	rep := MutationReport{Mutants: make([]Mutant, len(jobs)), Workers: workers}
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
		return MutationReport{}, err
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
func relevantModules(set *policySet) map[string]map[string]*ast.Module {
	all := set.all()
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
	for name := range set.modules {
		mods := map[string]*ast.Module{}
		for tn := range set.tests {
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// write prints the score and every surviving and equivalent mutant.
func (r MutationReport) write(w io.Writer) {
	perFile := map[string][4]int{}
	for _, m := range r.Mutants {
		c := perFile[m.File]
		switch m.Outcome {
		case "killed":
			c[0]++
		case "survived":
			c[1]++
		case "equivalent":
			c[2]++
		case "compile-error":
			c[3]++
		}
		perFile[m.File] = c
	}
	for _, f := range slices.Sorted(maps.Keys(perFile)) {
		c := perFile[f]
		fmt.Fprintf(w, "%s: %d/%d killed, %d survived, %d equivalent, %d compile errors (not counted)\n", f, c[0], c[0]+c[1], c[1], c[2], c[3])
	}
	for _, m := range r.Mutants {
		switch m.Outcome {
		case "survived":
			fmt.Fprintf(w, "SURVIVED %s:%d [%s] %s: %s\n    original: %s\n    mutated:  %s\n", m.File, m.Line, m.ID, m.Kind, m.Mutation, m.Original, m.Mutated)
		case "equivalent":
			fmt.Fprintf(w, "equivalent %s:%d [%s] %s: %s (%s)\n", m.File, m.Line, m.ID, m.Kind, m.Mutation, m.Reason)
		}
	}
	fmt.Fprintf(w, "mutation score %.2f%%: %d of %d mutants killed, %d survived, %d equivalent, %d compile errors (not counted); %d workers, %s\n",
		r.Score, r.Killed, r.Killed+r.Survived, r.Survived, r.Equivalent, r.CompileErrors, r.Workers, r.Duration.Round(time.Millisecond))
}

// equivalentMarkers reads the equivalence markers of the set's policy
// modules: mutant id → justification.
func equivalentMarkers(set *policySet, files []string) (map[string]string, error) {
	out := map[string]string{}
	for name, mod := range set.modules {
		if len(files) > 0 && !slices.Contains(files, name) {
			continue
		}
		for _, c := range mod.Comments {
			text := "#" + string(c.Text)
			if !strings.Contains(text, "mutation:") {
				continue
			}
			m := equivalentMarker.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: malformed mutation marker, want \"# mutation: equivalent <12-hex id> <why>\"", name, c.Location.Row)
			}
			if strings.TrimSpace(m[2]) == "" {
				return nil, fmt.Errorf("%s:%d: mutation marker %s without a justification", name, c.Location.Row, m[1])
			}
			out[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return out, nil
}

// comparisonNegation maps a comparison to its negation.
var comparisonNegation = map[string]*ast.Builtin{
	ast.Equal.Name: ast.NotEqual, ast.NotEqual.Name: ast.Equal,
	ast.LessThan.Name: ast.GreaterThanEq, ast.GreaterThanEq.Name: ast.LessThan,
	ast.GreaterThan.Name: ast.LessThanEq, ast.LessThanEq.Name: ast.GreaterThan,
}

// site is one place a mutation applies: the node and the mutation.
type site struct {
	kind     string
	line     int
	original string
	mutation string
	// apply mutates the node of a copy of the module (found again by the
	// same walk); a deletion names the expression's index instead.
	apply func(node any)
	index int
}

// walkRules visits, in a fixed order, every node of the rules of mod that
// a mutation may touch: each rule (else branches included), its head
// value and key, its body and their expressions and terms. visit gets the
// node, its rule and the innermost expression (nil in a head).
func walkRules(mod *ast.Module, visit func(node any, rule *ast.Rule, expr *ast.Expr)) {
	var rule *ast.Rule
	var expr *ast.Expr
	skip := map[*ast.Term]bool{}
	vis := ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case *ast.Expr:
			expr = x
			if x.IsCall() {
				skip[x.OperatorTerm()] = true
			}
		case *ast.Term:
			if skip[x] {
				return true
			}
			switch v := x.Value.(type) {
			case ast.Call:
				skip[v[0]] = true
			case ast.Object:
				for _, k := range v.Keys() {
					skip[k] = true
				}
			}
		}
		visit(x, rule, expr)
		if t, ok := x.(*ast.Term); ok {
			if _, isRef := t.Value.(ast.Ref); isRef {
				return true
			}
		}
		return false
	})
	var walkRule func(r *ast.Rule)
	walkRule = func(r *ast.Rule) {
		rule, expr = r, nil
		visit(r, r, nil)
		if r.Head.Key != nil {
			vis.Walk(r.Head.Key)
		}
		if r.Head.Value != nil {
			expr = nil
			vis.Walk(r.Head.Value)
		}
		expr = nil
		vis.Walk(r.Body)
		if r.Else != nil {
			walkRule(r.Else)
			rule = r
		}
	}
	for _, r := range mod.Rules {
		walkRule(r)
	}
}

// mutationSites lists the mutations of mod, in walk order.
func mutationSites(mod *ast.Module, kinds map[string][]string, refs map[string][]string) []site {
	var out []site
	walkRules(mod, func(node any, rule *ast.Rule, expr *ast.Expr) {
		out = append(out, sitesOf(node, rule, expr, kinds, refs)...)
	})
	return out
}

// ruleText is the first source line of a rule (an else branch's text runs
// to the end of the chain).
func ruleText(r *ast.Rule) string {
	if r.Location != nil && len(r.Location.Text) > 0 {
		return strings.Join(strings.Fields(firstLine(string(r.Location.Text))), " ")
	}
	return fmt.Sprint(r.Head)
}

func text(loc *ast.Location, fallback any) string {
	if loc != nil && len(loc.Text) > 0 {
		return strings.Join(strings.Fields(string(loc.Text)), " ")
	}
	return fmt.Sprint(fallback)
}

// sitesOf lists the mutations of one node.
func sitesOf(node any, rule *ast.Rule, expr *ast.Expr, kinds, refs map[string][]string) []site {
	var out []site
	ctxText := func(loc *ast.Location) (int, string) {
		if expr != nil {
			return expr.Location.Row, text(expr.Location, expr)
		}
		if loc != nil {
			return loc.Row, ruleText(rule)
		}
		return rule.Location.Row, ruleText(rule)
	}
	switch x := node.(type) {
	case *ast.Rule:
		if x.Default {
			return nil
		}
		line, orig := x.Location.Row, ruleText(x)
		if !(len(x.Body) == 1 && x.Body[0].Equal(ast.NewExpr(ast.BooleanTerm(true)))) {
			out = append(out, site{kind: MutBodyTrue, line: line, original: orig, mutation: "body → true", apply: func(n any) { n.(*ast.Rule).Body = ast.NewBody(ast.NewExpr(ast.BooleanTerm(true))) }})
		}
		out = append(out, site{kind: MutBodyFalse, line: line, original: orig, mutation: "body → false", apply: func(n any) { n.(*ast.Rule).Body = ast.NewBody(ast.NewExpr(ast.BooleanTerm(false))) }})
	case ast.Body:
		if len(x) < 2 {
			return nil
		}
		for i, e := range x {
			out = append(out, site{kind: MutDeleteExpr, line: e.Location.Row, original: text(e.Location, e), mutation: "expression deleted", index: i})
		}
	case *ast.Expr:
		if x.IsCall() {
			if neg, ok := comparisonNegation[x.Operator().String()]; ok {
				out = append(out, site{kind: MutNegateComparison, line: x.Location.Row, original: text(x.Location, x), mutation: fmt.Sprintf("%s → %s", x.Operator(), neg.Name), apply: func(n any) {
					e := n.(*ast.Expr)
					e.Terms.([]*ast.Term)[0] = ast.NewTerm(neg.Ref())
				}})
			}
		}
		switch t := x.Terms.(type) {
		case *ast.Term, []*ast.Term:
			// the body `true` of a rule written without one (x := v) is
			// not source: its negation is body-false's mutant
			implicit := false
			if tt, ok := t.(*ast.Term); ok {
				implicit = tt.Equal(ast.BooleanTerm(true)) && rule != nil && len(rule.Body) == 1 && rule.Body[0] == x
			}
			if !implicit && !x.IsAssignment() && !x.IsEquality() {
				mut := "not added"
				if x.Negated {
					mut = "not removed"
				}
				out = append(out, site{kind: MutToggleNot, line: x.Location.Row, original: text(x.Location, x), mutation: mut, apply: func(n any) { e := n.(*ast.Expr); e.Negated = !e.Negated }})
			}
		}
	case *ast.Term:
		switch v := x.Value.(type) {
		case ast.String:
			s := string(v)
			for _, other := range swapTargets(kinds[s], s) {
				line, orig := ctxText(x.Location)
				out = append(out, site{kind: MutSwapString, line: line, original: orig, mutation: fmt.Sprintf("%q → %q", s, other), apply: func(n any) { replaceString(n.(*ast.Term), other) }})
			}
		case ast.Ref:
			prefix, last, ok := refParts(v)
			if !ok {
				return nil
			}
			for _, other := range swapTargets(refs[prefix], last) {
				line, orig := ctxText(x.Location)
				out = append(out, site{kind: MutSwapRef, line: line, original: orig, mutation: fmt.Sprintf("%s → %s.%s", v, prefix, other), apply: func(n any) {
					r := n.(*ast.Term).Value.(ast.Ref).Copy()
					r[len(r)-1] = ast.StringTerm(other)
					n.(*ast.Term).Value = r
				}})
			}
		}
	}
	return out
}

// replaceString makes t the string s. The printer writes a string as its
// source text when it has one (to keep raw strings raw), so the text goes
// too.
func replaceString(t *ast.Term, s string) {
	t.Value = ast.String(s)
	if t.Location != nil {
		loc := *t.Location
		loc.Text = []byte(strconv.Quote(s))
		t.Location = &loc
	}
}

// maxFullSwap is the size of a kind up to which a literal or reference is
// swapped for every other member; in a larger kind it is swapped for its
// two neighbours in sorted order, which keeps the number of mutants
// linear in the size of the set.
const maxFullSwap = 4

// swapTargets returns the members of kind (sorted) that v is swapped for.
func swapTargets(kind []string, v string) []string {
	i := slices.Index(kind, v)
	if i < 0 || len(kind) < 2 {
		return nil
	}
	if len(kind) <= maxFullSwap {
		return slices.DeleteFunc(slices.Clone(kind), func(s string) bool { return s == v })
	}
	return []string{kind[(i+1)%len(kind)], kind[(i+len(kind)-1)%len(kind)]}
}

// applyMutation returns mutant i of mod: a copy of mod with the mutation
// applied, printed with format.Ast and parsed again (so that the mutant is
// exactly what its source says). An error means the mutant does not
// print or parse: a compile error.
func applyMutation(mod *ast.Module, i int, kinds, refs map[string][]string) (Mutant, *ast.Module, error) {
	cp := mod.Copy()
	var m Mutant
	n := 0
	var applied bool
	var mutatedNode any
	walkRules(cp, func(node any, rule *ast.Rule, expr *ast.Expr) {
		if applied {
			return
		}
		sites := sitesOf(node, rule, expr, kinds, refs)
		if i >= n+len(sites) {
			n += len(sites)
			return
		}
		s := sites[i-n]
		m = Mutant{Line: s.line, Kind: s.kind, Original: s.original, Mutation: s.mutation}
		if s.kind == MutDeleteExpr {
			deleteExpr(rule, node.(ast.Body), s.index)
			mutatedNode = node
		} else {
			s.apply(node)
			mutatedNode = node
		}
		switch {
		case expr != nil && s.kind != MutDeleteExpr:
			mutatedNode = expr
		case s.kind == MutBodyTrue || s.kind == MutBodyFalse:
			mutatedNode = rule.Head
		}
		applied = true
	})
	if !applied {
		return m, nil, fmt.Errorf("mutant %d not found", i)
	}
	if b, err := format.Ast(mutatedNode); err == nil {
		m.Mutated = strings.Join(strings.Fields(string(b)), " ")
		if m.Kind == MutBodyTrue || m.Kind == MutBodyFalse {
			m.Mutated = strings.TrimSpace(m.Mutated) + " if " + strings.TrimPrefix(m.Kind, "body-")
		}
	}
	if m.Kind == MutDeleteExpr {
		m.Mutated = "(deleted)"
	}
	src, err := format.Ast(cp)
	if err != nil {
		return m, nil, fmt.Errorf("print: %w", err)
	}
	out, err := ast.ParseModuleWithOpts(mod.Package.Location.File, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
	if err != nil {
		return m, nil, fmt.Errorf("parse: %w", err)
	}
	return m, out, nil
}

// deleteExpr removes expression idx from body, where the rule (or a
// nested body: comprehension, every) holds it.
func deleteExpr(rule *ast.Rule, body ast.Body, idx int) {
	shorter := append(ast.Body{}, body[:idx]...)
	shorter = append(shorter, body[idx+1:]...)
	replaced := false
	replace := func(b *ast.Body) {
		if !replaced && len(*b) == len(body) && len(body) > 0 && &(*b)[0] == &body[0] {
			*b = shorter
			replaced = true
		}
	}
	for r := rule; r != nil && !replaced; r = r.Else {
		replace(&r.Body)
	}
	if replaced {
		return
	}
	ast.NewGenericVisitor(func(n any) bool {
		switch x := n.(type) {
		case *ast.ArrayComprehension:
			replace(&x.Body)
		case *ast.SetComprehension:
			replace(&x.Body)
		case *ast.ObjectComprehension:
			replace(&x.Body)
		case *ast.Every:
			replace(&x.Body)
		}
		return replaced
	}).Walk(rule)
}

// refParts splits a ref a.b.c (a variable followed by string keys) into
// its prefix "a.b" and last key "c".
func refParts(r ast.Ref) (string, string, bool) {
	if len(r) < 2 {
		return "", "", false
	}
	if _, ok := r[0].Value.(ast.Var); !ok {
		return "", "", false
	}
	for _, t := range r[1:] {
		if _, ok := t.Value.(ast.String); !ok {
			return "", "", false
		}
	}
	last := string(r[len(r)-1].Value.(ast.String))
	return r[:len(r)-1].String(), last, true
}

// refKinds groups the refs of the policy modules by prefix: prefix → the
// last keys seen with it ("input.account" → id, type, manager_id, ...).
func refKinds(set *policySet) map[string][]string {
	seen := map[string]map[string]bool{}
	for name, mod := range set.modules {
		if name == routesModuleName {
			continue
		}
		walkRules(mod, func(node any, _ *ast.Rule, _ *ast.Expr) {
			t, ok := node.(*ast.Term)
			if !ok {
				return
			}
			r, ok := t.Value.(ast.Ref)
			if !ok {
				return
			}
			if p, last, ok := refParts(r); ok {
				if seen[p] == nil {
					seen[p] = map[string]bool{}
				}
				seen[p][last] = true
			}
		})
	}
	out := map[string][]string{}
	for p, lasts := range seen {
		if len(lasts) > 1 {
			out[p] = slices.Sorted(maps.Keys(lasts))
		}
	}
	return out
}

var (
	routeShape = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) /`)
	codeShape  = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)
	wordShape  = regexp.MustCompile(`^[a-z][a-z0-9_.]*$`)
)

// stringKinds finds the kinds of the string literals of the policy
// modules from where they are used: literals of one collection, literals
// compared with the same reference (==, !=, in), literals at the same
// argument of the same function, and the values of one rule are of one
// kind, and a value is of one kind wherever it appears. A literal that is
// alone in its kind joins the others of its shape (a route "GET /x", a
// code "UPPER_CASE", a lower-case word). Messages and other text with
// spaces are not swapped. It returns each literal's kind: value → every
// value of its kind, sorted.
func stringKinds(set *policySet) map[string][]string {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		parent[x] = x
		return x
	}
	union := func(a, b string) { parent[find(a)] = find(b) }
	eligible := func(t *ast.Term) (string, bool) {
		s, ok := t.Value.(ast.String)
		if !ok {
			return "", false
		}
		v := string(s)
		return v, routeShape.MatchString(v) || !strings.ContainsAny(v, " \t\n%")
	}
	values := map[string]bool{}
	link := func(t *ast.Term, key string) {
		if v, ok := eligible(t); ok {
			values[v] = true
			union("v:"+v, key)
		}
	}
	collection := func(t *ast.Term, key string) {
		switch c := t.Value.(type) {
		case ast.Set:
			c.Foreach(func(e *ast.Term) { link(e, key) })
		case *ast.Array:
			c.Foreach(func(e *ast.Term) { link(e, key) })
		case ast.Object:
			c.Foreach(func(_, v *ast.Term) { link(v, key) })
		}
	}
	for name, mod := range set.modules {
		if name == routesModuleName {
			continue
		}
		walkRules(mod, func(node any, rule *ast.Rule, expr *ast.Expr) {
			switch x := node.(type) {
			case *ast.Rule:
				if x.Head.Value != nil {
					link(x.Head.Value, "rule:"+name+":"+x.Head.Ref().String())
				}
			case *ast.Term:
				if _, ok := x.Value.(ast.String); ok {
					if _, ok := eligible(x); ok {
						values[string(x.Value.(ast.String))] = true
						find("v:" + string(x.Value.(ast.String)))
					}
				}
				collection(x, fmt.Sprintf("coll:%p", x))
			case *ast.Expr:
				if !x.IsCall() {
					return
				}
				op := x.Operator().String()
				ops := x.Operands()
				switch op {
				case ast.Equal.Name, ast.NotEqual.Name, ast.Member.Name:
					if len(ops) != 2 {
						return
					}
					for k, side := range ops {
						other := ops[1-k]
						if r, ok := side.Value.(ast.Ref); ok {
							key := "cmp:" + r.String()
							link(other, key)
							collection(other, key)
						}
					}
				default:
					for k, a := range ops {
						link(a, fmt.Sprintf("arg:%s/%d", op, k))
					}
				}
			}
		})
	}
	// singletons join the others of their shape
	members := map[string][]string{}
	for v := range values {
		members[find("v:"+v)] = append(members[find("v:"+v)], v)
	}
	for _, vs := range members {
		if len(vs) != 1 {
			continue
		}
		v := vs[0]
		switch {
		case routeShape.MatchString(v):
			union("v:"+v, "shape:route")
		case codeShape.MatchString(v):
			union("v:"+v, "shape:code")
		case wordShape.MatchString(v):
			union("v:"+v, "shape:word")
		}
	}
	groups := map[string][]string{}
	for v := range values {
		groups[find("v:"+v)] = append(groups[find("v:"+v)], v)
	}
	out := map[string][]string{}
	for _, vs := range groups {
		if len(vs) < 2 {
			continue
		}
		sort.Strings(vs)
		for _, v := range vs {
			out[v] = vs
		}
	}
	return out
}
