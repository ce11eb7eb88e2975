package policy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckEmbedded: the embedded set passes Check and the summary lists
// every scope.
func TestCheckEmbedded(t *testing.T) {
	var out bytes.Buffer
	if err := Check(context.Background(), Options{Schema: ResourceList(testResources)}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"revision ", "coverage 100.00%", "scope services   user       (account 7, manager 3): account_id = 7", "ok\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCheckPositionalIndex: a services rule that indexes the unknown by
// position (the residue is silently dropped, which would mean "every row")
// passes the Rego tests but fails Check, which names the rule.
func TestCheckPositionalIndex(t *testing.T) {
	dir := copyPolicy(t)
	appendFile(t, filepath.Join(dir, "fleet/scope/scope.rego"), `
services if {
	input.services[0].account_id == input.account.id
}
`)
	var out bytes.Buffer
	err := Check(context.Background(), Options{Dir: dir, Schema: ResourceList(testResources)}, &out)
	if err == nil {
		t.Fatalf("Check passed:\n%s", out.String())
	}
	if !strings.Contains(err.Error(), `scope rule "services"`) || !errors.Is(err, ErrScope) {
		t.Errorf("error does not name the rule: %v", err)
	}
	t.Log(err)
}

// TestCheckOtherFailures: other broken sets are refused with the reason.
func TestCheckOtherFailures(t *testing.T) {
	cases := []struct {
		name, file, text, want string
	}{
		{"syntax", "fleet/scope/scope.rego", "\nservices if {\n", "rego_parse_error"},
		{"bare_column", "fleet/scope/scope.rego", "\nservices if input.services.account_id\n", `scope rule "services"`},
		{"no_row_condition", "fleet/scope/scope.rego", "\nreports if input.account.type == \"user\"\n", `scope rule "reports" for a user principal: policy: scope: "reports": empty condition`},
		{"column_to_column", "fleet/scope/scope.rego", "\nservices if input.services.account_id == input.services.manager_id\n", `compares with another column`},
		{"huge_number", "fleet/scope/scope.rego", "\nservices if input.services.account_id == 99999999999999999\n", `beyond 2^53`},
		{"iterate_column", "fleet/scope/scope.rego", "\nevents if {\n\tsome i in input.events.imei\n\ti == \"1\"\n}\n", `scope rule "events"`},
		{"function_of_column", "fleet/scope/scope.rego", "\npassengers if lower(input.passengers.account_id) == \"x\"\n", `scope rule "passengers"`},
		{"nested_column", "fleet/scope/scope.rego", "\nevents if input.events.day_time.mon == true\n", `scope rule "events"`},
		{"unrestricted_non_admin", "fleet/scope/scope.rego", "\nunrestricted if input.account.type == \"user\"\n", `scope rule "services" for a user principal: unrestricted`},
		{"decision_missing", "fleet/authz/authz.rego", "\nextra := 1\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyPolicy(t)
			appendFile(t, filepath.Join(dir, c.file), c.text)
			// without its tests, so that the start-up checks meet the change
			if err := os.Remove(filepath.Join(dir, "fleet/scope/scope_test.rego")); err != nil {
				t.Fatal(err)
			}
			err := Check(context.Background(), Options{Dir: dir, Schema: ResourceList(testResources)}, &bytes.Buffer{})
			if c.want == "" {
				if err != nil {
					t.Errorf("harmless addition refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Check: %v; want an error containing %q", err, c.want)
			}
			t.Log(err)
		})
	}
	if err := Check(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "missing"), Schema: ResourceList(testResources)}, &bytes.Buffer{}); err == nil {
		t.Error("a missing directory passed")
	}
}

// TestScopeRulesMatchResources: a resource without a scope rule, and a
// scope rule without a resource, both stop New with a message naming it.
func TestScopeRulesMatchResources(t *testing.T) {
	ctx := context.Background()
	_, err := New(ctx, Options{Schema: ResourceList(append(slices.Clone(testResources), "no_such_resource"))})
	if err == nil || !strings.Contains(err.Error(), `resource "no_such_resource" has no scope rule data.fleet.scope.no_such_resource`) {
		t.Errorf("a resource without a rule: %v", err)
	}
	// the last rule's resource left out (whichever it is: a new rule may
	// come anywhere in scope.rego)
	last := len(testResources) - 1
	_, err = New(ctx, Options{Schema: ResourceList(testResources[:last])})
	if err == nil || !strings.Contains(err.Error(), "scope rule data.fleet.scope."+string(testResources[last])+" ") {
		t.Errorf("a rule without a resource (%s): %v", testResources[last], err)
	}
	if _, err = New(ctx, Options{}); err == nil {
		t.Error("New without resources accepted the scope rules")
	}
}
