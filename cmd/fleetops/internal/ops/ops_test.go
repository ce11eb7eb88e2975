package ops

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
)

func runNamed(t *testing.T, name string) Run {
	t.Helper()
	for _, r := range Runs() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no run %q", name)
	return Run{}
}

// TestOldCommandLines: the command lines of docs/operations.md (written
// for go run ./scripts/ops) parse unchanged after the run's name, with
// every flag each run had.
func TestOldCommandLines(t *testing.T) {
	for _, tc := range []struct {
		run  string
		args []string
	}{
		{"replicas", nil},
		{"replicas", strings.Fields("--window 15s --failover 30s --stop-at 10s --redis-outage 10s --concurrency 16")},
		{"replicas", strings.Fields("--redis redis://127.0.0.1:6379/0 --limit 120 --max-requests 300000 --redis-outage 0")},
		{"load", strings.Fields("--duration 3m --concurrency 16 --warmup 5s")},
		{"load", strings.Fields("--max-requests 2000000 --limit 600 --limit-window 20s")},
		{"outage", strings.Fields("--before 15s --down 20s --after 25s --concurrency 16")},
		{"outage", strings.Fields("--freeze --max-requests 500000")},
		{"flood", strings.Fields("--phase 15s --concurrency 16 --good 4 --slow 32 --max-requests 1000000")},
		{"flood", strings.Fields("--pg postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable --keep")},
		{"load", strings.Fields("--pg postgres://postgres@[::1]:5432/postgres --keep=false")},
		{"failover", strings.Fields("--how freeze --step 15s --concurrency 8")},
		{"failover", strings.Fields("--how postmaster --max-requests 100000")},
	} {
		c, body, err := runNamed(t, tc.run).parse(tc.args, &bytes.Buffer{})
		if err != nil || body == nil {
			t.Errorf("%s %q: %v", tc.run, tc.args, err)
		}
		if strings.Contains(strings.Join(tc.args, " "), "--keep ") || strings.HasSuffix(strings.Join(tc.args, " "), "--keep") {
			if !c.keep {
				t.Errorf("%s %q: --keep not set", tc.run, tc.args)
			}
		}
	}
}

// TestParseRefuses enumerates what a run must refuse before it starts
// anything: unknown flags, positional arguments, bad values, and every
// address off loopback.
func TestParseRefuses(t *testing.T) {
	for _, r := range Runs() {
		for _, args := range [][]string{
			{"--bogus"},
			{"positional"},
			{"--concurrency", "x"},
			{"--pg", "postgres://postgres@10.0.0.1:5432/postgres"},
			{"--pg", "postgres://postgres@db.example.com/postgres"},
			{"--pg", "postgres://postgres@127.0.0.1/postgres?host=10.0.0.1"},
			{"--pg", "not a url"},
		} {
			var out bytes.Buffer
			if _, _, err := r.parse(args, &out); !cli.IsUsage(err) {
				t.Errorf("%s %q: %v, want a usage error", r.Name, args, err)
			}
			if out.Len() != 0 {
				t.Errorf("%s %q printed %q", r.Name, args, out.String())
			}
		}
		// Only the replicas run takes --redis.
		_, _, err := r.parse([]string{"--redis", "redis://127.0.0.1:6379/0"}, &bytes.Buffer{})
		if (err == nil) != (r.Name == "replicas") {
			t.Errorf("%s --redis: %v", r.Name, err)
		}
		var out bytes.Buffer
		if _, _, err := r.parse([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-pg") {
			t.Errorf("%s -h: %v\n%s", r.Name, err, out.String())
		}
	}
	for _, how := range []string{"bogus", "", "KILL"} {
		if _, _, err := runNamed(t, "failover").parse([]string{"--how", how}, &bytes.Buffer{}); !cli.IsUsage(err) {
			t.Errorf("failover --how %q: %v, want a usage error", how, err)
		}
	}
	for _, bad := range []string{"redis://10.0.0.1:6379/0", "redis://cache.example.com:6379", "http://127.0.0.1:6379"} {
		if _, _, err := runNamed(t, "replicas").parse([]string{"--redis", bad}, &bytes.Buffer{}); !cli.IsUsage(err) {
			t.Errorf("replicas --redis %s: %v", bad, err)
		}
	}
}

// TestChecks: each verdict is printed, and the run fails with every
// failed claim when any failed.
func TestChecks(t *testing.T) {
	var out bytes.Buffer
	c := &checks{e: &env{out: &out, start: time.Now()}}
	if c.err() != nil {
		t.Fatal("no check yet, but an error")
	}
	c.expect(true, "one %d", 1)
	if c.err() != nil {
		t.Fatalf("a passed check failed the run: %v", c.err())
	}
	c.expect(false, "two %s", "b")
	c.expect(false, "three")
	if got, want := out.String(), "  PASS  one 1\n  FAIL  two b\n  FAIL  three\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if err := c.err(); err == nil || err.Error() != "2 check(s) failed: two b; three" {
		t.Errorf("err = %v", err)
	}
}

func TestCleanEnviron(t *testing.T) {
	got := cleanEnviron([]string{"PATH=/bin", "FLEET_DATABASE_URL=x", "OTEL_SERVICE_NAME=y", "HOME=/h", "FLEETING=1", "XFLEET_A=1"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/h FLEETING=1 XFLEET_A=1" {
		t.Errorf("%q", got)
	}
}

// TestRunDatabase: a run manages only its own fleetapi_ops* databases.
func TestRunDatabase(t *testing.T) {
	for _, ok := range []string{"fleetapi_ops_load", "fleetapi_ops_flood", "fleetapi_ops_replicas"} {
		if err := runDatabase(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"fleetapi", "postgres", "fleetapi_large", "template1", "x_fleetapi_ops"} {
		if err := runDatabase(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestParseToken reads `fleetapi token create`'s output (cmd/fleetapi
// token.go prints the id line, then the secret).
func TestParseToken(t *testing.T) {
	secret := "flt_" + strings.Repeat("aZ09", 8)
	out := "migrations: up to date\ntoken 42 \"ops-load-admin\" for admin (shown once, store it now):\n" + secret + "\n"
	tok, err := parseToken(out)
	if err != nil || tok.ID != 42 || tok.Secret != secret {
		t.Errorf("%+v, %v", tok, err)
	}
	for _, bad := range []string{
		"",
		"token 42 \"x\" for a (shown once):\nflt_short\n",
		"token x \"x\" for a:\n" + secret + "\n",
		secret + "\n",
		"token 99999999999999999999 \"x\" for a:\n" + secret + "\n",
	} {
		if tok, err := parseToken(bad); err == nil {
			t.Errorf("%q: %+v", bad, tok)
		}
	}
}

// TestFindListening reads a replica's JSON log: other lines, lines that
// are not JSON and a "listening" line without an address are passed over.
func TestFindListening(t *testing.T) {
	path := t.TempDir() + "/replica.log"
	log := `not json
{"msg":"migrations","version":12}
{"msg":"listening"}
{"msg":"listening","addr":"127.0.0.1:41234"}
{"msg":"listening","addr":"127.0.0.1:9"}
`
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := findListening(path); got != "127.0.0.1:41234" {
		t.Errorf("findListening = %q", got)
	}
	if got := findListening(path + ".missing"); got != "" {
		t.Errorf("no file: %q", got)
	}
	r := &replica{logPath: path}
	if n := len(r.logLines("listening")); n != 3 {
		t.Errorf("%d listening lines, want 3", n)
	}
}

func TestResultOK(t *testing.T) {
	var r result
	r.Status = 201
	if !r.ok(200, 201) || r.ok(200) || r.ok() {
		t.Error("ok with a 201")
	}
	r.Err = errors.New("reset")
	if r.ok(201) {
		t.Error("a transport error is never ok")
	}
	if got := errorCode([]byte(`{"success":false,"error":{"code":"RATE_LIMITED","message":"x"}}`)); got != "RATE_LIMITED" {
		t.Errorf("errorCode = %q", got)
	}
	for _, body := range []string{"", "not json", `{"data":[]}`, `[1]`} {
		if got := errorCode([]byte(body)); got != "" {
			t.Errorf("errorCode(%q) = %q", body, got)
		}
	}
}
