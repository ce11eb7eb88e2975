package policy

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
)

// TestRegoTests runs the embedded *_test.rego files through RunTests and
// requires every test to pass and every line of the policy modules to be
// covered.
func TestRegoTests(t *testing.T) {
	var out bytes.Buffer
	rep, err := RunTests(context.Background(), "", &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("RunTests: %v", err)
	}
	if rep.Passed == 0 || rep.Failed != 0 {
		t.Fatalf("passed %d, failed %d", rep.Passed, rep.Failed)
	}
	for _, f := range []string{"fleet/authz/authz.rego", "fleet/scope/scope.rego"} {
		if got := rep.Files[f]; got != 100 {
			t.Errorf("coverage of %s = %.2f%%, want 100%%", f, got)
		}
	}
	if rep.Coverage != 100 || len(rep.NotCovered) > 0 {
		t.Errorf("overall coverage %.2f%%, not covered %v", rep.Coverage, rep.NotCovered)
	}
	if !strings.Contains(out.String(), "PASS data.fleet.authz_test.test_expired") {
		t.Errorf("output lacks a per-test line:\n%s", out.String())
	}
}

// TestRunTestsFailing: a failing Rego test is reported by name and stops New.
func TestRunTestsFailing(t *testing.T) {
	dir := copyPolicy(t)
	appendFile(t, filepath.Join(dir, "fleet/authz/authz_test.rego"), `
test_deliberately_wrong if {
	authz.decision.allow with input as with_account({"active": false})
}
`)
	var out bytes.Buffer
	rep, err := RunTests(context.Background(), dir, &out)
	if !errors.Is(err, ErrTestsFailed) || rep.Failed != 1 {
		t.Fatalf("RunTests: failed %d, err %v", rep.Failed, err)
	}
	if !strings.Contains(out.String(), "FAIL data.fleet.authz_test.test_deliberately_wrong") {
		t.Errorf("output:\n%s", out.String())
	}
	_, err = New(context.Background(), Options{Dir: dir, Schema: ResourceList(testResources)})
	if !errors.Is(err, ErrTestsFailed) || !strings.Contains(err.Error(), "test_deliberately_wrong") {
		t.Errorf("New: %v", err)
	}
}

// TestRegoFormatted: every embedded Rego file is `opa fmt` clean (Rego v1).
func TestRegoFormatted(t *testing.T) {
	err := fs.WalkDir(embedded, "rego", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(name) != ".rego" {
			return err
		}
		src, err := fs.ReadFile(embedded, name)
		if err != nil {
			return err
		}
		got, err := format.SourceWithOpts(name, src, format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			return err
		}
		if !bytes.Equal(got, src) {
			t.Errorf("%s is not opa fmt clean; run: go run github.com/open-policy-agent/opa@v1.22.2 fmt -w policy/rego", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestInputSchema: the inputs NewInput builds, and the schema's own
// example, match schemas/input.json.
func TestInputSchema(t *testing.T) {
	doc, match := schemaMatcher(t, "schemas/input.json")
	today := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	p := tenancy.Principal{
		Token:   tenancy.Token{ID: 1, Permissions: []string{"GET /services", "*", "GET *"}},
		Account: tenancy.Account{ID: 7, Type: tenancy.Subaccount, ManagerID: 3, Active: true, Privileges: []string{"reports"}},
		Ancestors: []tenancy.Account{
			{ID: 3, Type: tenancy.User, ManagerID: 2, Active: true, ReadOnly: true, Privileges: []string{}},
			{ID: 2, Type: tenancy.Manager, ManagerID: 1, AccountExpire: true, ExpireDate: today.AddDate(0, 0, -1)},
			{ID: 1, Type: tenancy.Admin},
		},
	}
	expiredAdmin := tenancy.Principal{
		Token:   tenancy.Token{ID: 2},
		Account: tenancy.Account{ID: 1, Type: tenancy.Admin, AccountExpire: true, ExpireDate: today.AddDate(0, 0, -1)},
	}
	full := NewInput(p, "GET", "/services", today)
	if c := full.Account.Chain; len(c) != 3 || c[0] != (AncestorInput{ID: 3, Type: "user", Active: true, ReadOnly: true}) ||
		c[1] != (AncestorInput{ID: 2, Type: "manager", Expired: true}) || c[2] != (AncestorInput{ID: 1, Type: "admin"}) {
		t.Errorf("chain %+v", c)
	}
	inputs := []any{full, NewInput(expiredAdmin, "POST", "/passengers", today)}
	if !inputs[1].(Input).Account.Expired || inputs[1].(Input).Account.Chain == nil {
		t.Errorf("admin input %+v", inputs[1])
	}
	inputs = append(inputs, doc["examples"].([]any)...)
	for i, in := range inputs {
		if ok, errs := match(in); !ok {
			t.Errorf("input %d does not match the schema: %v", i, errs)
		}
	}
	bad := NewInput(p, "GET", "/services", today)
	bad.Account.Type = "reseller"
	if ok, _ := match(bad); ok {
		t.Error("an unknown account type matches the schema")
	}
	bad = NewInput(p, "GET", "/services", today)
	bad.Account.Chain[1].Type = "reseller"
	if ok, _ := match(bad); ok {
		t.Error("an unknown account type in the chain matches the schema")
	}
}

// copyPolicy copies the embedded policy set into a temporary directory.
func copyPolicy(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(embedded, "rego", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, strings.TrimPrefix(name, "rego"))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		src, err := fs.ReadFile(embedded, name)
		if err != nil {
			return err
		}
		return os.WriteFile(target, src, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func appendFile(t testing.TB, name, text string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
