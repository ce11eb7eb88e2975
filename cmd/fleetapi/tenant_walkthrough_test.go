package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// The frame of the tenant walkthrough in docs/tenants.md.
const (
	tenantWalkthroughStart = "# --- tenant walkthrough "
	tenantWalkthroughEnd   = "# --- end of tenant walkthrough ---"
)

// TestTenantWalkthroughRuns: the tenant walkthrough of docs/tenants.md,
// cut out of the page and run with bash (curl, sed and the real fleetapi
// commands) against `fleetapi dev`, with the two lines dev prints for its
// server in place of the page's, works: the limits are set and shown, the
// quotas and the account's rate limit refuse exactly what the page says,
// the usage holds the customer's requests, the export file is written, the
// dry run of the erase exits 2 and the erase removes every row of the
// customer, whose token is then refused. It runs twice on one database:
// the walkthrough leaves nothing behind that a second run would trip on.
func TestTenantWalkthroughRuns(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed", "date"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s: %v", tool, err)
		}
	}
	script := tenantWalkthroughOfDoc(t)
	defaultURL, err := devDatabaseURL(storage.DefaultURL, false)
	if err != nil {
		t.Fatal(err)
	}
	docVars := tenantWalkthroughVars("127.0.0.1:8080", defaultURL)
	if !strings.Contains(script, "\n"+docVars) {
		t.Fatalf("the walkthrough does not start with the lines dev prints for its defaults:\n%s", docVars)
	}

	db := storagetest.New(t)
	// A flush every second: the walkthrough's wait (11 s) holds many.
	addr, printed := startDev(t, db, "export FLEET_DATABASE_URL=", "--usage-flush-interval", "1s")
	devVars := tenantWalkthroughVars(addr, db.URL)
	if !strings.Contains(printed, "\n"+devVars) {
		t.Fatalf("dev does not print the walkthrough's lines for its server:\n%s\nin\n%s", devVars, printed)
	}
	script = strings.Replace(script, docVars, devVars, 1)

	// `fleetapi` on the script's PATH is this test binary run as the program.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if strings.Contains(exe, "'") {
		t.Fatalf("cannot quote the test binary's path %q", exe)
	}
	if err := os.WriteFile(filepath.Join(bin, "fleetapi"), []byte("#!/bin/sh\n"+asMainEnv+"=1 exec '"+exe+"' \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "FLEET_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}

	for run := 1; run <= 2; run++ {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script+"\nprintf '\\nRESULT %s\\n' \"$CUST\"\n")
		cmd.Dir, cmd.Env = dir, env
		b, err := cmd.CombinedOutput()
		cancel()
		got := string(b)
		if err != nil {
			t.Fatalf("run %d: bash: %v\n%s", run, err, got)
		}
		checkTenantWalkthrough(t, got, dir, db)
	}
}

// tenantWalkthroughOfDoc is the tenant walkthrough of docs/tenants.md,
// its frame included.
func tenantWalkthroughOfDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/tenants.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, tenantWalkthroughStart)
	j := strings.Index(doc, tenantWalkthroughEnd)
	if i < 0 || j < i || strings.Count(doc, tenantWalkthroughStart) != 1 || !strings.HasSuffix(doc[:i], "```bash\n") {
		t.Fatalf("docs/tenants.md holds no single tenant walkthrough opening a bash block (%q ... %q)", tenantWalkthroughStart, tenantWalkthroughEnd)
	}
	return doc[i : j+len(tenantWalkthroughEnd)]
}

// walkthroughRefusal is one refusal the walkthrough shows.
type walkthroughRefusal struct {
	Code    string         `json:"code"`
	Details map[string]any `json:"details"`
}

// checkTenantWalkthrough checks what one run of the tenant walkthrough
// printed (got), the file it wrote in dir, and that the database db keeps
// no row of the erased customer.
func checkTenantWalkthrough(t *testing.T, got, dir string, db *storagetest.DB) {
	t.Helper()
	for _, bad := range []string{"curl:", "command not found", "syntax error", "No such file"} {
		if strings.Contains(got, bad) {
			t.Fatalf("a line failed (%q):\n%s", bad, got)
		}
	}
	m := regexp.MustCompile(`\nRESULT ([0-9]+)\n`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("the customer's id was not captured:\n%s", got)
	}
	cust := m[1]

	// Exactly the refusals the page shows, in its order.
	var refusals []walkthroughRefusal
	for _, line := range strings.Split(got, "\n") {
		if !strings.HasPrefix(line, `{"success":false`) {
			continue
		}
		var env struct {
			Error walkthroughRefusal `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		refusals = append(refusals, env.Error)
	}
	want := []walkthroughRefusal{
		{"QUOTA_EXCEEDED", map[string]any{"quota": "devices", "limit": 1.0, "used": 1.0}},
		{"QUOTA_EXCEEDED", map[string]any{"quota": "tokens", "limit": 2.0, "used": 2.0}},
		{"RATE_LIMITED", map[string]any{"scope": "account", "limit": 2.0, "window_seconds": 60.0}},
		{"INVALID_TOKEN", nil},
		{"NOT_FOUND", nil},
	}
	if !reflect.DeepEqual(refusals, want) {
		t.Fatalf("refusals %+v, want %+v:\n%s", refusals, want, got)
	}

	for _, s := range []string{
		// GET /accounts/{id}: the limits in force and the use
		`"rate_limit":2,`, `"quotas":{"subaccounts":1000,"tokens":2,"devices":1,"passengers":1000000,"webhooks":100,"zones":10000,"events":10000},"usage":{"subaccounts":0,"tokens":1,"devices":0,"passengers":0,"webhooks":0,"zones":0,"events":0}`,
		// the headers of the first request: the account's budget is the tighter
		"Ratelimit-Limit: 2\r\nRatelimit-Remaining: 1\r\n",
		// GET /usage and the export: the customer's three requests
		`"requests":3,"rows_returned":1,"writes":0,"errors_4xx":1,"errors_5xx":0,`, `"routes":{"GET /me":2,"GET /objects":1}`,
		"day,account_id,username,route,requests,rows_returned,writes,errors_4xx,errors_5xx,bytes_out,billed_account_id,billed_username\n",
		"," + cust + ",vandelay,GET /me,2,0,0,1,0,", "," + cust + ",vandelay,GET /objects,1,1,0,0,0,",
		"exported vandelay: 1 accounts, 1 objects, 0 grants, 2 tokens,",
		"would erase vandelay (account " + cust + ")", "\nexit status 2\n", "\nerased vandelay (account " + cust + ")",
	} {
		if !strings.Contains(got, s) {
			t.Fatalf("the walkthrough did not show %q:\n%s", s, got)
		}
	}

	// The export file: mode 0600, the customer's device and both tokens by their hashes.
	path := filepath.Join(dir, "vandelay.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export file: %v %v, want mode 0600", fi, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"username":"vandelay"`, `"353456789012348"`, `"vandelay-admin"`, `"vandelay-read"`, `"secret_hash"`} {
		if !strings.Contains(string(b), s) {
			t.Fatalf("the export lacks %s:\n%s", s, b)
		}
	}

	// No row of the customer is left in any table naming an account but
	// its usage (billing data: its three requests stay), and the erase is
	// in the audit trail.
	ctx := context.Background()
	var tables []string
	if err := db.NewRaw(`SELECT table_name FROM information_schema.columns
		WHERE table_schema = 'public' AND column_name = 'account_id' ORDER BY 1`).Scan(ctx, &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 5 {
		t.Fatalf("tables with account_id: %v", tables)
	}
	var requests int
	if err := db.NewRaw("SELECT coalesce(sum(requests), 0) FROM usage_daily WHERE account_id = ?", cust).Scan(ctx, &requests); err != nil || requests != 3 {
		t.Errorf("the erased customer's usage: %d requests (%v), want 3", requests, err)
	}
	for _, table := range append(tables, "accounts") {
		if table == "usage_daily" {
			continue
		}
		col := "account_id"
		if table == "accounts" {
			col = "id"
		}
		var n int
		if err := db.NewRaw("SELECT count(*) FROM "+table+" WHERE "+col+" = ?", cust).Scan(ctx, &n); err != nil || n != 0 {
			t.Errorf("%s keeps %d rows of the erased customer %s (%v)", table, n, cust, err)
		}
	}
	var erased int
	if err := db.NewRaw(`SELECT count(*) FROM audit_events WHERE action = 'account.erase' AND target_id = ?`, cust).Scan(ctx, &erased); err != nil || erased != 1 {
		t.Errorf("account.erase events of %s: %d (%v)", cust, erased, err)
	}
}
