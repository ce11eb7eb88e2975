package mutation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/fleetapi/fleetapi/policy"
)

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
func refKinds(modules map[string]*ast.Module) map[string][]string {
	seen := map[string]map[string]bool{}
	for name, mod := range modules {
		if policy.IsRoutesModule(name) {
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
func stringKinds(modules map[string]*ast.Module) map[string][]string {
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
	for name, mod := range modules {
		if policy.IsRoutesModule(name) {
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
