package main

import (
	"context"
	"encoding/json"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// result is what the program did: exit status and both streams.
type result struct {
	code           int
	stdout, stderr string
}

// runMain runs the program as main does, with separate streams.
func runMain(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb syncBuffer
	code := mainWith(context.Background(), args, envOf(env), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// runBounded runs the program like runMain, but stops it as soon as it
// serves (or after a minute): a command that should refuse to serve fails
// its test instead of hanging it when it serves after all.
func runBounded(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- mainWith(ctx, args, envOf(env), &out, &errb) }()
	for {
		select {
		case code := <-done:
			return result{code, out.String(), errb.String()}
		case <-time.After(20 * time.Millisecond):
			if strings.Contains(out.String(), `"msg":"listening"`) {
				cancel()
			}
		}
	}
}

// unreachable is a database nobody listens on: a command that answers
// without touching the database answers the same with it.
var unreachable = map[string]string{"FLEET_DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=1"}

// commandsOfUsage returns the commands the top-level usage lists.
func commandsOfUsage(t *testing.T) []string {
	t.Helper()
	_, list, ok := strings.Cut(usage, "commands:\n")
	if !ok {
		t.Fatal("usage has no command list")
	}
	list, _, _ = strings.Cut(list, "\n\n")
	var cmds []string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			cmds = append(cmds, f[0])
		}
	}
	if len(cmds) < 9 {
		t.Fatalf("commands of the usage: %v", cmds)
	}
	return cmds
}

// everyCommand is every command and subcommand, with what its usage line
// must show (its positional arguments).
var everyCommand = []struct {
	args  []string
	usage string
}{
	{nil, "usage: fleetapi COMMAND [flags] [arguments]"},
	{[]string{"serve"}, "usage: fleetapi serve [flags]"},
	{[]string{"dev"}, "usage: fleetapi dev [flags]"},
	{[]string{"migrate"}, "usage: fleetapi migrate [up|down|status] [flags]"},
	{[]string{"migrate", "up"}, "usage: fleetapi migrate [up|down|status] [flags]"},
	{[]string{"migrate", "down"}, "usage: fleetapi migrate [up|down|status] [flags]"},
	{[]string{"migrate", "status"}, "usage: fleetapi migrate [up|down|status] [flags]"},
	{[]string{"import"}, "usage: fleetapi import [flags] FILE"},
	{[]string{"generate"}, "usage: fleetapi generate [flags]"},
	{[]string{"token"}, "usage: fleetapi token create|list|revoke"},
	{[]string{"token", "create"}, "usage: fleetapi token create --account USER [--permission P...]"},
	{[]string{"token", "list"}, "usage: fleetapi token list --account USER"},
	{[]string{"token", "revoke"}, "usage: fleetapi token revoke [flags] ID..."},
	{[]string{"tenant"}, "usage: fleetapi tenant export|erase"},
	{[]string{"tenant", "export"}, "usage: fleetapi tenant export [flags] USERNAME"},
	{[]string{"tenant", "erase"}, "usage: fleetapi tenant erase [flags] USERNAME"},
	{[]string{"usage"}, "usage: fleetapi usage export"},
	{[]string{"usage", "export"}, "usage: fleetapi usage export --from YYYY-MM-DD --to YYYY-MM-DD [--format csv|jsonl]"},
	{[]string{"policy"}, "usage: fleetapi policy test|check|explain"},
	{[]string{"policy", "test"}, "usage: fleetapi policy test [--min-coverage P | --mutate [--workers N] [--files F,...] [--json]] [DIR]"},
	{[]string{"policy", "diff"}, "usage: fleetapi policy diff [--database-url U] [--json] OLD NEW"},
	{[]string{"policy", "check"}, "usage: fleetapi policy check [--policy-bundle-key FILE] DIR|BUNDLE|URL"},
	{[]string{"policy", "explain"}, `usage: fleetapi policy explain --token-id N --route "METHOD /path"`},
	{[]string{"policy", "routes"}, "usage: fleetapi policy routes [--write] [DIR]"},
	{[]string{"openapi"}, "usage: fleetapi openapi [--markdown]"},
	{[]string{"version"}, "usage: fleetapi version"},
}

// isGroup reports whether args name a command that expects a subcommand
// or action next.
func isGroup(args []string) bool {
	return len(args) == 1 && (args[0] == "token" || args[0] == "tenant" || args[0] == "usage" || args[0] == "policy" || args[0] == "migrate")
}

// TestHelpEveryCommand: every command and subcommand answers -h, --help
// and help with its usage on stdout, nothing on stderr, exit 0, and
// without touching the database.
func TestHelpEveryCommand(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range everyCommand {
		if len(c.args) > 0 {
			covered[c.args[0]] = true
		}
	}
	for _, cmd := range commandsOfUsage(t) {
		if !covered[cmd] {
			t.Errorf("command %q of the usage is not in everyCommand", cmd)
		}
	}
	for _, c := range everyCommand {
		for _, h := range []string{"-h", "--help", "help"} {
			if h == "help" && len(c.args) > 0 && !isGroup(c.args) {
				continue // "help" is a word, not a flag: only where a command, subcommand or action is expected
			}
			args := append(append([]string{}, c.args...), h)
			t.Run(strings.Join(args, "_"), func(t *testing.T) {
				r := runMain(t, unreachable, args...)
				if r.code != 0 || !strings.HasPrefix(r.stdout, c.usage) || r.stderr != "" {
					t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and stdout starting %q", r.code, r.stdout, r.stderr, c.usage)
				}
			})
		}
	}
}

// TestUsageErrorsExit2: a mistake in the command line (unknown command,
// subcommand or flag, a missing or extra argument, a value that cannot be
// right) exits 2 with the mistake and the way to the usage on stderr,
// nothing on stdout, before any database is touched.
func TestUsageErrorsExit2(t *testing.T) {
	tests := [][]string{
		{},
		{"frobnicate"},
		{"serve", "--bogus"},
		{"serve", "extra"},
		{"serve", "--rate-limit", "many"},
		{"dev", "extra"},
		{"dev", "--bogus"},
		{"migrate", "sideways"},
		{"migrate", "up", "--confirm"},
		{"migrate", "status", "--confirm"},
		{"migrate", "--bogus"},
		{"migrate", "up", "extra"},
		{"import"},
		{"import", "a.json", "b.json"},
		{"import", "--bogus", "a.json"},
		{"generate", "extra"},
		{"generate", "--preset", "huge"},
		{"generate", "--today", "tomorrow"},
		{"generate", "--seed", "x"},
		{"token"},
		{"token", "frob"},
		{"token", "create"},
		{"token", "create", "--account", "acme", "--permission", "GET /servics"},
		{"token", "create", "--account", "acme", "--permission", "PUT /services"},
		{"token", "create", "--account", "acme", "--permission", "GET /events/12"},
		{"token", "create", "--account", "acme", "--permission", "*", "extra"},
		{"token", "create", "--account", "acme", "--permission", "GET *", "--permission", "GET *"},
		{"token", "create", "--account", "acme", "--permission", "*", "--expires", "-1h"},
		{"token", "create", "--account", "acme", "--permission", "*", "--rate-limit", "-1"},
		{"token", "list"},
		{"token", "list", "--account", "acme", "extra"},
		{"token", "revoke"},
		{"token", "revoke", "abc"},
		{"token", "revoke", "0"},
		{"token", "revoke", "--bogus", "1"},
		{"policy"},
		{"policy", "frob"},
		{"policy", "check"},
		{"policy", "check", "a", "b"},
		{"policy", "test", "a", "b"},
		{"policy", "diff", "a"},
		{"policy", "diff", "a", "b", "c"},
		{"policy", "explain"},
		{"policy", "explain", "--token-id", "1"},
		{"policy", "explain", "--route", "GET /me"},
		{"policy", "explain", "--token-id", "1", "--route", "GET /nope"},
		{"policy", "explain", "--token-id", "1", "--route", "PUT /services"},
		{"policy", "explain", "--token-id", "1", "--route", "GET /events/12/x"},
		{"policy", "explain", "--token-id", "1", "--route", "/events"},
		{"policy", "explain", "--token-id", "1", "--action", "account.delete"},
		{"policy", "explain", "--token-id", "1", "--action", "grants.replace", "--change", "[1]"},
		{"policy", "explain", "--token-id", "1", "--action", "grants.replace", "--change", `{"imei":`},
		{"policy", "explain", "--token-id", "1", "--action", "token.create", "--change", `{"rate_limit":1.5}`},
		{"policy", "explain", "--token-id", "1", "--action", "account.update", "--target-id", "-1"},
		{"policy", "explain", "--token-id", "1", "--action", "account.update", "--route", "GET /me"},
		{"policy", "explain", "--token-id", "1", "--route", "GET /me", "--target-id", "3"},
		{"policy", "explain", "--token-id", "1", "--route", "GET /me", "--change", "{}x"},
		{"tenant"},
		{"tenant", "delete", "acme"},
		{"tenant", "export"},
		{"tenant", "export", "a", "b"},
		{"usage"},
		{"usage", "frob"},
		{"usage", "export"},
		{"usage", "export", "--from", "2026-11-24"},
		{"usage", "export", "--from", "2026-11-25", "--to", "2026-11-24"},
		{"usage", "export", "--from", "2026-11-24", "--to", "2026-11-25", "--format", "xml"},
		{"usage", "export", "--from", "2026-11-24", "--to", "2026-11-25", "extra"},
		{"tenant", "erase"},
		{"tenant", "erase", "--yes", "acme"},
		{"openapi", "extra"},
		{"openapi", "--markdown", "extra"},
		{"openapi", "--markdown=maybe"},
		{"version", "extra"},
		{"version", "--bogus"},
	}
	covered := map[string]bool{}
	for _, args := range tests {
		if len(args) > 0 {
			covered[args[0]] = true
		}
	}
	for _, cmd := range commandsOfUsage(t) {
		if !covered[cmd] {
			t.Errorf("no usage error of command %q is tested", cmd)
		}
	}
	for _, args := range tests {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			r := runMain(t, unreachable, args...)
			if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "fleetapi: ") || !strings.Contains(r.stderr, "-h` for usage") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2, no stdout, the mistake and the usage hint on stderr", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// driverWords are what the operator must never read (docs/design.md §7).
var driverWords = []string{"sql:", "no rows", "constraint", "duplicate key", "violates", "SQLSTATE"}

// TestFailuresExit1: a command that fails exits 1 with an error in the
// operator's words on stderr.
func TestFailuresExit1(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	tests := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env, []string{"token", "create", "--account", "nobody", "--permission", "*"}, `token create: account "nobody" not found`},
		{env, []string{"token", "create", "--account", "acme", "--permission", "*", "--name", "acme-all"}, `token create: a token named "acme-all" already exists for acme`},
		{env, []string{"token", "list", "--account", "nobody"}, `token list: account "nobody" not found`},
		{env, []string{"token", "revoke", "99999"}, `token revoke: token 99999 not found`},
		{env, []string{"policy", "explain", "--token-id", "99999", "--route", "GET /me"}, `policy explain: token 99999 not found`},
		{env, []string{"import", "/nonexistent/file.json"}, `import: open /nonexistent/file.json`},
		{env, []string{"policy", "check", "/nonexistent"}, `/nonexistent`},
		{env, []string{"policy", "test", "/nonexistent"}, `/nonexistent`},
		{unreachable, []string{"migrate", "status"}, `database`},
		{unreachable, []string{"token", "list", "--account", "acme"}, `database unavailable`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			r := runMain(t, tc.env, tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "for usage") {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tc.want)
			}
			for _, w := range driverWords {
				if strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q speaks the driver's language (%q)", r.stderr, w)
				}
			}
		})
	}
}

// TestStdoutIsData: each command that prints data prints only its data on
// stdout, so that it can be redirected to a file; progress and
// confirmations of what was done to stderr.
func TestStdoutIsData(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	if r := runMain(t, env, "import", writeDemoFile(t)); r.code != 0 || !strings.HasPrefix(r.stdout, "imported ") || strings.Count(r.stdout, "\n") != 1 ||
		!strings.Contains(r.stderr, "demo tokens") {
		t.Fatalf("import: want its summary on stdout and the demo token note on stderr: %+v", r)
	}
	t.Run("token_create_prints_only_the_secret", func(t *testing.T) {
		r := runMain(t, env, "token", "create", "--account", "acme", "--permission", "GET /services", "--name", "ci")
		if r.code != 0 || !regexp.MustCompile(`^flt_[0-9A-Za-z]{32}\n$`).MatchString(r.stdout) || !strings.Contains(r.stderr, `"ci" for acme`) {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("openapi_is_json", func(t *testing.T) {
		r := runMain(t, env, "openapi")
		if r.code != 0 || !json.Valid([]byte(r.stdout)) || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q, stdout valid JSON %v", r.code, r.stderr, json.Valid([]byte(r.stdout)))
		}
	})
	t.Run("openapi_markdown_is_the_api_guide", func(t *testing.T) {
		r := runMain(t, env, "openapi", "--markdown")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "# fleetapi client API v2") || !strings.Contains(r.stdout, "\n### 7.1 GET /me\n") || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q, stdout starts %.80q", r.code, r.stderr, r.stdout)
		}
	})
	t.Run("token_list_is_the_table", func(t *testing.T) {
		r := runMain(t, env, "token", "list", "--account", "acme")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "ID ") || r.stderr != "" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("generate_prints_only_json_lines", func(t *testing.T) {
		gdb := storagetest.New(t)
		r := runMain(t, map[string]string{"FLEET_DATABASE_URL": gdb.URL}, "generate", "--managers", "1", "--users", "4", "--subaccounts", "2",
			"--devices", "20", "--services", "40", "--reports", "4", "--events", "4", "--passengers", "4", "--today", "2026-11-01")
		if r.code != 0 {
			t.Fatalf("generate: %+v", r)
		}
		// The 4 fixed tokens, then the pool: the manager, the 4 users and
		// the subaccounts of usable users.
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		fixed, pool := 0, 0
		for _, l := range lines {
			var tok map[string]any
			if err := json.Unmarshal([]byte(l), &tok); err != nil || tok["token"] == nil {
				t.Fatalf("stdout line %q is not a token JSON line: %v", l, err)
			}
			if tok["pool"] == true {
				pool++
			} else {
				fixed++
			}
		}
		if fixed != 4 || pool < 1+4 || pool > 1+4+2 {
			t.Fatalf("stdout has %d fixed and %d pool tokens, want 4 and 5 to 7:\n%s", fixed, pool, r.stdout)
		}
		for _, want := range []string{"generating preset small", "services", "reference day 2026-11-01"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("progress on stderr lacks %q:\n%s", want, r.stderr)
			}
		}
	})
}

// TestVersion: version, commit, Go version and the policy revision that
// the server logs for the embedded set.
func TestVersion(t *testing.T) {
	r := runMain(t, unreachable, "version")
	rev, err := policy.EmbeddedRevision()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fleetapi ", "commit:", "go:              " + runtime.Version(), "policy revision: " + rev} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("exit %d, stdout lacks %q:\n%s", r.code, want, r.stdout)
		}
	}
	v := versionFrom(&debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}})
	if v.Version != "v1.2.3" || v.Commit != "abc123" || v.CommitTime != "2026-01-02T03:04:05Z" || !v.Modified || v.GoVersion != "go1.99" {
		t.Errorf("versionFrom: %+v", v)
	}
	if v := versionFrom(nil); v.Commit != "unknown" || v.GoVersion != runtime.Version() {
		t.Errorf("versionFrom(nil): %+v", v)
	}
}
