package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// ManagementExplanation says why DecideManagement answered as it did for
// one input (fleetapi policy explain --action).
type ManagementExplanation struct {
	Input    ManagementInput
	Decision Decision
	Revision string
	// Failed lists, in evaluation order and without repeats, the policy
	// expressions that were false ("file:row: source").
	Failed []string
	// Trace is OPA's trace of those failures with their context.
	Trace string
}

// ExplainManagement evaluates data.fleet.manage.decision for in with
// tracing, without the decision log, metrics or span of DecideManagement,
// and reports the expressions that failed. Its decision is exactly
// DecideManagement's: a malformed one is an error wrapping ErrUndefined.
func (e *snapshot) ExplainManagement(ctx context.Context, in ManagementInput) (ManagementExplanation, error) {
	input, err := in.value()
	if err != nil {
		return ManagementExplanation{}, err
	}
	x := ManagementExplanation{Input: in, Revision: e.revision}
	x.Decision, x.Failed, x.Trace, err = explainDecision(ctx, "management decision", e.manageQ, input, managementDecisionFrom)
	if err != nil {
		return ManagementExplanation{}, err
	}
	return x, nil
}

// String renders the explanation for the command line.
func (x ManagementExplanation) String() string {
	var sb strings.Builder
	in := x.Input
	fmt.Fprintf(&sb, "action:   %s\n", in.Action)
	rate := "unlimited"
	if in.Token.RateLimit != nil {
		rate = fmt.Sprintf("%d/min", *in.Token.RateLimit)
	}
	expires := "never"
	if in.Token.ExpiresAt != nil {
		expires = in.Token.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z07:00")
	}
	fmt.Fprintf(&sb, "token:    id %d, permissions %q, expires %s, rate limit %s\n", in.Token.ID, in.Token.Permissions, expires, rate)
	writeAccount(&sb, in.Account)
	if t := in.Target; t != nil {
		fmt.Fprintf(&sb, "target:   id %d, type %s, manager %d", t.ID, t.Type, t.ManagerID)
		if in.Action == ActionGrantsReplace {
			fmt.Fprintf(&sb, ", devices of its parent asked for %q", t.OwnedIMEI)
		}
		sb.WriteString("\n")
		writeChain(&sb, t.Chain)
	} else {
		sb.WriteString("target:   none (an account at the top, or outside the caller's management scope)\n")
	}
	change, err := json.Marshal(in.Change)
	if err != nil {
		change = []byte(fmt.Sprint(in.Change))
	}
	fmt.Fprintf(&sb, "change:   %s\n", change)
	writeOutcome(&sb, x.Revision, x.Decision, x.Failed)
	return sb.String()
}

// writeChain renders the accounts above an account, nearest first.
func writeChain(sb *strings.Builder, chain []AncestorInput) {
	for i, c := range chain {
		label := "above:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(sb, "%-9s id %d, type %s, active %t, expired %t, read-only %t\n", label, c.ID, c.Type, c.Active, c.Expired, c.ReadOnly)
	}
}
