package policy

import (
	"context"
	"strings"
	"testing"
)

// TestExplainPrivilege: why is a subaccount without "reports" denied on
// GET /reports? The explanation shows the denial, that the earlier checks
// did not fire, and that a subaccount does not hold every privilege.
func TestExplainPrivilege(t *testing.T) {
	e := engine(t)
	x, err := e.Explain(context.Background(), principal("subaccount", "event_notifications").at("GET", "/reports"))
	if err != nil {
		t.Fatal(err)
	}
	if x.Decision.Code != "PRIVILEGE_REQUIRED" || x.Decision.Details["privilege"] != "reports" {
		t.Fatalf("decision %+v", x.Decision)
	}
	failed := strings.Join(x.Failed, "\n")
	for _, want := range []string{
		"authz.rego:", "not input.account.active == true", // the account is active
		"not token_permits", // the token grants the route
		`input.account.type in {"admin", "manager", "user"}`, // not every privilege
		"p in effective_privileges   (inside `not`",          // reports is not held
	} {
		if !strings.Contains(failed, want) {
			t.Errorf("explanation lacks %q:\n%s", want, failed)
		}
	}
	s := x.String()
	for _, want := range []string{"route:    GET /reports", "decision: DENY PRIVILEGE_REQUIRED", "conditions that did not hold:", `privileges ["event_notifications"]`} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(x.Trace, "Fail") {
		t.Errorf("trace: %s", x.Trace)
	}
	t.Log("\n" + s)
}

func TestExplainAllow(t *testing.T) {
	x, err := engine(t).Explain(context.Background(), principal("user"))
	if err != nil || !x.Decision.Allow || !strings.Contains(x.String(), "decision: ALLOW") {
		t.Errorf("%v %v", x, err)
	}
}

// TestExplainChain: explain shows the accounts above the caller and the
// one that denied it.
func TestExplainChain(t *testing.T) {
	in := principal("subaccount", "reports")
	in.Account.Chain = []AncestorInput{{ID: 3, Type: "user", Active: false}, {ID: 1, Type: "admin", Active: true}}
	x, err := engine(t).Explain(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	s := x.String()
	for _, want := range []string{
		"above:    id 3, type user, active false, expired false, read-only false\n",
		"          id 1, type admin, active true,",
		"decision: DENY ACCOUNT_INACTIVE: a managing account is inactive map[account_id:3]",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q:\n%s", want, s)
		}
	}
}
