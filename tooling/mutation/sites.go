package mutation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
)

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
			out = append(out, site{kind: BodyTrue, line: line, original: orig, mutation: "body → true", apply: func(n any) { n.(*ast.Rule).Body = ast.NewBody(ast.NewExpr(ast.BooleanTerm(true))) }})
		}
		out = append(out, site{kind: BodyFalse, line: line, original: orig, mutation: "body → false", apply: func(n any) { n.(*ast.Rule).Body = ast.NewBody(ast.NewExpr(ast.BooleanTerm(false))) }})
	case ast.Body:
		if len(x) < 2 {
			return nil
		}
		for i, e := range x {
			out = append(out, site{kind: DeleteExpr, line: e.Location.Row, original: text(e.Location, e), mutation: "expression deleted", index: i})
		}
	case *ast.Expr:
		if x.IsCall() {
			if neg, ok := comparisonNegation[x.Operator().String()]; ok {
				out = append(out, site{kind: NegateComparison, line: x.Location.Row, original: text(x.Location, x), mutation: fmt.Sprintf("%s → %s", x.Operator(), neg.Name), apply: func(n any) {
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
				out = append(out, site{kind: ToggleNot, line: x.Location.Row, original: text(x.Location, x), mutation: mut, apply: func(n any) { e := n.(*ast.Expr); e.Negated = !e.Negated }})
			}
		}
	case *ast.Term:
		switch v := x.Value.(type) {
		case ast.String:
			s := string(v)
			for _, other := range swapTargets(kinds[s], s) {
				line, orig := ctxText(x.Location)
				out = append(out, site{kind: SwapString, line: line, original: orig, mutation: fmt.Sprintf("%q → %q", s, other), apply: func(n any) { replaceString(n.(*ast.Term), other) }})
			}
		case ast.Ref:
			prefix, last, ok := refParts(v)
			if !ok {
				return nil
			}
			for _, other := range swapTargets(refs[prefix], last) {
				line, orig := ctxText(x.Location)
				out = append(out, site{kind: SwapRef, line: line, original: orig, mutation: fmt.Sprintf("%s → %s.%s", v, prefix, other), apply: func(n any) {
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
		m = Mutant{Line: s.line, Rule: rule.Head.Ref().String(), Kind: s.kind, Original: s.original, Mutation: s.mutation}
		if s.kind == DeleteExpr {
			deleteExpr(rule, node.(ast.Body), s.index)
			mutatedNode = node
		} else {
			s.apply(node)
			mutatedNode = node
		}
		switch {
		case expr != nil && s.kind != DeleteExpr:
			mutatedNode = expr
		case s.kind == BodyTrue || s.kind == BodyFalse:
			mutatedNode = rule.Head
		}
		applied = true
	})
	if !applied {
		return m, nil, fmt.Errorf("mutant %d not found", i)
	}
	if b, err := format.Ast(mutatedNode); err == nil {
		m.Mutated = strings.Join(strings.Fields(string(b)), " ")
		if m.Kind == BodyTrue || m.Kind == BodyFalse {
			m.Mutated = strings.TrimSpace(m.Mutated) + " if " + strings.TrimPrefix(m.Kind, "body-")
		}
	}
	if m.Kind == DeleteExpr {
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
