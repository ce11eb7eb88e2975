package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// copyDir copies the policy set to a temporary folder.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPolicyCheckNamesBrokenRule(t *testing.T) {
	dir := copyDir(t, "../../policy/rego")
	if out := runOK(t, nil, "policy", "check", dir); !strings.Contains(out, "ok") {
		t.Fatalf("check of the intact copy: %s", out)
	}
	file := filepath.Join(dir, "fleet", "scope", "scope.rego")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "services if visible(input.services)", "services if input.services[0].account_id == input.account.id", 1)
	if broken == string(b) {
		t.Fatal("the services rule to break was not found")
	}
	if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	err = run(context.Background(), []string{"policy", "check", dir}, envOf(nil), &out)
	if err == nil || !strings.Contains(err.Error(), `scope rule "services"`) {
		t.Fatalf("want an error naming the services rule, got %v", err)
	}
	// serve refuses to start on the broken set too.
	db := storagetest.New(t)
	err = run(context.Background(), []string{"serve"}, envOf(map[string]string{
		"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_POLICY_DIR": dir,
	}), &out)
	if err == nil || !strings.Contains(err.Error(), "services") {
		t.Fatalf("serve with a broken policy: %v", err)
	}
}

func TestPolicyTestAndExplain(t *testing.T) {
	out := runOK(t, nil, "policy", "test")
	if !regexp.MustCompile(`\d+ passed, 0 failed`).MatchString(out) || !strings.Contains(out, "coverage 100.00% overall") {
		t.Fatalf("policy test output:\n%s", out)
	}
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	list := runOK(t, env, "token", "list", "--account", "globex-day")
	id := regexp.MustCompile(`(?m)^(\d+)\s+globex-day-all`).FindStringSubmatch(list)
	if id == nil {
		t.Fatalf("no token in:\n%s", list)
	}
	out = runOK(t, env, "policy", "explain", "--token-id", id[1], "--route", "GET /reports")
	if !strings.Contains(out, "PRIVILEGE_REQUIRED") || !strings.Contains(out, "reports") {
		t.Fatalf("explain:\n%s", out)
	}
	// the accounts above (globex, fleetco, admin) are part of the input
	if !regexp.MustCompile(`above: +id \d+, type user, active true[^\n]*\n +id \d+, type manager,[^\n]*\n +id \d+, type admin,`).MatchString(out) {
		t.Fatalf("explain lacks the chain of globex-day:\n%s", out)
	}
}
