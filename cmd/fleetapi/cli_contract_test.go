package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tooling/policydiff"
)

// TestCLIOneValidationAndFlagOrder (issue 19 item 22): token create takes
// no --permission as POST /tokens takes "permissions": [] (one validation,
// storage.ValidateNewToken, for both); policy diff reads FLEET_DATABASE_URL
// as the other commands do; flags may follow the arguments (policy diff
// OLD NEW --json); and migrate up extra names extra as an unexpected
// argument, not an unknown action.
func TestCLIOneValidationAndFlagOrder(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))

	t.Run("token create without permission", func(t *testing.T) {
		r := runMain(t, env, "token", "create", "--account", "globex", "--name", "me-only")
		if r.code != 0 || !regexp.MustCompile(`^flt_[0-9A-Za-z]{32}\n$`).MatchString(r.stdout) {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		var perms int
		if err := db.NewRaw("SELECT cardinality(permissions) FROM tokens WHERE name = 'me-only'").Scan(context.Background(), &perms); err != nil || perms != 0 {
			t.Fatalf("permissions %v, %v; want the empty list", perms, err)
		}
		// The same validation refuses the same things: an unknown route, a negative limit.
		for _, args := range [][]string{{"--permission", "GET /servics"}, {"--rate-limit", "-1"}} {
			r := runMain(t, unreachable, append([]string{"token", "create", "--account", "globex"}, args...)...)
			if r.code != exitUsage {
				t.Fatalf("%v: exit %d, %s", args, r.code, r.stderr)
			}
		}
	})

	t.Run("policy diff reads FLEET_DATABASE_URL, flags after arguments", func(t *testing.T) {
		a, b := copyRego(t), copyRego(t)
		r := runMain(t, env, "policy", "diff", a, b, "--json")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var rep policydiff.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("not JSON: %v: %q", err, r.stdout)
		}
		if rep.Mode != "database" {
			t.Fatalf("mode %q with FLEET_DATABASE_URL set, want database", rep.Mode)
		}
		r = runMain(t, map[string]string{"FLEET_DATABASE_URL": ""}, "policy", "diff", a, "--json", b)
		if err := json.Unmarshal([]byte(r.stdout), &rep); r.code != 0 || err != nil || rep.Mode != "synthetic" {
			t.Fatalf("empty FLEET_DATABASE_URL: exit %d, mode %q: %s", r.code, rep.Mode, r.stderr)
		}
	})

	t.Run("flags after arguments everywhere", func(t *testing.T) {
		if out := runOK(t, nil, "migrate", "status", "--database-url", db.URL); !strings.Contains(out, "applied") {
			t.Fatalf("migrate status --database-url: %s", out)
		}
		list := runOK(t, nil, "token", "list", "--account", "globex", "--database-url", db.URL)
		id := regexp.MustCompile(`(?m)^(\d+)\s+me-only\s`).FindStringSubmatch(list)
		if id == nil {
			t.Fatalf("no me-only in:\n%s", list)
		}
		runOK(t, nil, "token", "revoke", id[1], "--database-url", db.URL)
		if r := runMain(t, nil, "policy", "check", copyRego(t), "--bogus"); r.code != exitUsage {
			t.Fatalf("a flag after the argument is parsed as a flag: exit %d", r.code)
		}
		// After "--" everything is an argument.
		if r := runMain(t, unreachable, "import", "--", "--json"); r.code != exitFailure || !strings.Contains(r.stderr, "--json") {
			t.Fatalf("import -- --json: exit %d, %s", r.code, r.stderr)
		}
	})

	t.Run("migrate up extra", func(t *testing.T) {
		r := runMain(t, unreachable, "migrate", "up", "extra")
		if r.code != exitUsage || !strings.Contains(r.stderr, `unexpected argument "extra"`) || strings.Contains(r.stderr, "unknown action") {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		r = runMain(t, unreachable, "migrate", "--confirm", "down", "extra")
		if r.code != exitUsage || !strings.Contains(r.stderr, `unexpected argument "extra"`) {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	})
}
