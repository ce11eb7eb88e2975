package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/lineage"
)

// Explanation says why Decide answered as it did for one input.
type Explanation struct {
	Input    Input
	Decision Decision
	Revision string
	// Failed lists, in evaluation order and without repeats, the policy
	// expressions that were false ("file:row: source"): the conditions that
	// did not hold on the way to the decision.
	Failed []string
	// Trace is OPA's trace of those failures with their context.
	Trace string
}

// Explain evaluates the decision for in with tracing (bypassing the cache
// and the decision log) and reports the expressions that failed. It
// returns ErrUndefined when the policy yields no decision.
func (e *Engine) Explain(ctx context.Context, in Input) (Explanation, error) {
	buf := topdown.NewBufferTracer()
	rs, err := e.decideQ.Eval(ctx, evalInput(in), rego.EvalQueryTracer(buf), rego.EvalRuleIndexing(false))
	if err != nil {
		return Explanation{}, fmt.Errorf("evaluate decision: %w", err)
	}
	d, err := decisionFrom(rs)
	if err != nil {
		return Explanation{}, err
	}
	fails := lineage.Fails(*buf)
	x := Explanation{Input: in, Decision: d, Revision: e.revision}
	seen := map[string]bool{}
	for _, ev := range fails {
		expr, ok := ev.Node.(*ast.Expr)
		if ev.Op != topdown.FailOp || !ok || expr.Location == nil || expr.Location.File == "" {
			continue
		}
		text := string(expr.Location.Text)
		if inner, ok := strings.CutPrefix(text, "not "); ok && !expr.Negated {
			// the operand of a negation failed, so the negation held
			text = inner + "   (inside `not`: so the negation held)"
		}
		line := fmt.Sprintf("%s:%d: %s", expr.Location.File, expr.Location.Row, text)
		if !seen[line] {
			seen[line] = true
			x.Failed = append(x.Failed, line)
		}
	}
	var sb strings.Builder
	topdown.PrettyTraceWithLocation(&sb, fails)
	x.Trace = sb.String()
	return x, nil
}

// String renders the explanation for the command line.
func (x Explanation) String() string {
	var sb strings.Builder
	a := x.Input.Account
	fmt.Fprintf(&sb, "route:    %s %s\n", x.Input.Request.Method, x.Input.Request.Route)
	fmt.Fprintf(&sb, "token:    id %d, permissions %q\n", x.Input.Token.ID, x.Input.Token.Permissions)
	fmt.Fprintf(&sb, "account:  id %d, type %s, manager %d, active %t, expired %t, read-only %t, privileges %q\n",
		a.ID, a.Type, a.ManagerID, a.Active, a.Expired, a.ReadOnly, a.Privileges)
	for i, c := range a.Chain {
		label := "above:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(&sb, "%-9s id %d, type %s, active %t, expired %t, read-only %t\n", label, c.ID, c.Type, c.Active, c.Expired, c.ReadOnly)
	}
	fmt.Fprintf(&sb, "revision: %s\n", x.Revision)
	if x.Decision.Allow {
		sb.WriteString("decision: ALLOW\n")
	} else {
		fmt.Fprintf(&sb, "decision: DENY %s: %s", x.Decision.Code, x.Decision.Message)
		if len(x.Decision.Details) > 0 {
			fmt.Fprintf(&sb, " %v", x.Decision.Details)
		}
		sb.WriteString("\n")
	}
	sb.WriteString("conditions that did not hold:\n")
	for _, f := range x.Failed {
		fmt.Fprintf(&sb, "  %s\n", f)
	}
	return sb.String()
}
