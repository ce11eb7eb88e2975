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
func (e *snapshot) Explain(ctx context.Context, in Input) (Explanation, error) {
	x := Explanation{Input: in, Revision: e.revision}
	var err error
	x.Decision, x.Failed, x.Trace, err = explainDecision(ctx, "decision", e.decideQ, in.value(), decisionFrom)
	if err != nil {
		return Explanation{}, err
	}
	return x, nil
}

// explainDecision evaluates the decision query q (named what in errors) on
// input with a trace and without rule indexing (so the trace holds every
// condition tried), reads the decision with from, and returns it with the
// conditions that did not hold and OPA's trace of them (failedConditions).
func explainDecision(ctx context.Context, what string, q rego.PreparedEvalQuery, input ast.Value, from func(rego.ResultSet) (Decision, error)) (d Decision, failed []string, trace string, err error) {
	buf := topdown.NewBufferTracer()
	rs, err := q.Eval(ctx, rego.EvalParsedInput(input), rego.EvalQueryTracer(buf), rego.EvalRuleIndexing(false))
	if err != nil {
		return Decision{}, nil, "", fmt.Errorf("evaluate %s: %w", what, err)
	}
	if d, err = from(rs); err != nil {
		return Decision{}, nil, "", err
	}
	failed, trace = failedConditions(buf)
	return d, failed, trace, nil
}

// failedConditions reads a trace: the policy expressions that were false,
// in evaluation order without repeats ("file:row: source"), and OPA's
// trace of those failures.
func failedConditions(buf *topdown.BufferTracer) (failed []string, trace string) {
	fails := lineage.Fails(*buf)
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
			failed = append(failed, line)
		}
	}
	var sb strings.Builder
	topdown.PrettyTraceWithLocation(&sb, fails)
	return failed, sb.String()
}

// String renders the explanation for the command line.
func (x Explanation) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "route:    %s %s\n", x.Input.Request.Method, x.Input.Request.Route)
	fmt.Fprintf(&sb, "token:    id %d, permissions %q\n", x.Input.Token.ID, x.Input.Token.Permissions)
	writeAccount(&sb, x.Input.Account)
	writeOutcome(&sb, x.Revision, x.Decision, x.Failed)
	return sb.String()
}

// writeAccount renders the calling account and the accounts above it.
func writeAccount(sb *strings.Builder, a AccountInput) {
	fmt.Fprintf(sb, "account:  id %d, type %s, manager %d, active %t, expired %t, read-only %t, privileges %q\n",
		a.ID, a.Type, a.ManagerID, a.Active, a.Expired, a.ReadOnly, a.Privileges)
	writeChain(sb, a.Chain)
}

// writeOutcome renders the revision, the decision and the conditions that
// did not hold.
func writeOutcome(sb *strings.Builder, revision string, d Decision, failed []string) {
	fmt.Fprintf(sb, "revision: %s\n", revision)
	if d.Allow {
		sb.WriteString("decision: ALLOW\n")
	} else {
		fmt.Fprintf(sb, "decision: DENY %s: %s", d.Code, d.Message)
		if len(d.Details) > 0 {
			fmt.Fprintf(sb, " %v", d.Details)
		}
		sb.WriteString("\n")
	}
	sb.WriteString("conditions that did not hold:\n")
	for _, f := range failed {
		fmt.Fprintf(sb, "  %s\n", f)
	}
}
