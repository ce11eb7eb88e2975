package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// asMainEnv set to 1 makes the test binary run as the fleetapi program
// itself (TestMain), so that a script a test runs can call the real
// fleetapi commands (TestTenantWalkthroughRuns) without a separate build.
const asMainEnv = "FLEETAPI_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main() // exits with the program's status
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// runOK runs the command and fails the test on error.
func runOK(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	var out syncBuffer
	if err := run(context.Background(), args, envOf(env), &out); err != nil {
		t.Fatalf("fleetapi %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func writeDemoFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.json")
	if err := os.WriteFile(path, demodata.File(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportServeMe runs the real run(): import a docs/design.md §8 file, serve on
// port 0, answer GET /api/v2/me, and shut down cleanly on cancel.
func TestImportServeMe(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_DECISION_LOG": "stdout"}
	out := runOK(t, env, "import", writeDemoFile(t))
	if !strings.Contains(out, "imported") {
		t.Fatalf("import output: %s", out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--allow-demo-tokens"}, envOf(env), &logs) }()
	addr := waitForAddr(t, &logs, done)

	token := demodata.Tokens()[0].Secret
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v2/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Success bool           `json:"success"`
		Data    map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !body.Success || body.Data["username"] != demodata.Tokens()[0].Username {
		t.Fatalf("GET /me: %d %+v", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `"decision_id"`) {
		t.Errorf("decision log (stdout) has no record:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("a token secret reached the logs")
	}
}

var listenRe = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

func waitForAddr(t *testing.T, logs *syncBuffer, done chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := listenRe.FindStringSubmatch(logs.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("server did not start:\n%s", logs.String())
	return ""
}

func TestMigrateCommands(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	if out := runOK(t, env, "migrate", "status"); !strings.Contains(out, "applied") {
		t.Fatalf("status: %s", out)
	}
	if out := runOK(t, env, "migrate", "down", "--confirm"); !strings.Contains(out, "rolled back") {
		t.Fatalf("down: %s", out)
	}
	if out := runOK(t, env, "migrate", "status"); !strings.Contains(out, "pending") {
		t.Fatalf("status after down: %s", out)
	}
	runOK(t, env, "migrate", "up")
	if out := runOK(t, env, "migrate", "status"); strings.Contains(out, "pending") {
		t.Fatalf("status after up: %s", out)
	}
}

func TestTokenCommands(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	out := runOK(t, env, "token", "create", "--account", "globex", "--permission", "GET /services", "--permission", "GET /me", "--name", "ci", "--expires", "24h")
	secret := regexp.MustCompile(`flt_[0-9A-Za-z]{32}`).FindString(out)
	if secret == "" {
		t.Fatalf("create printed no token: %s", out)
	}
	list := runOK(t, env, "token", "list", "--account", "globex")
	if !strings.Contains(list, "ci") || strings.Contains(list, secret) {
		t.Fatalf("list must show the token but never its secret:\n%s", list)
	}
	id := regexp.MustCompile(`(?m)^(\d+)\s+ci\s`).FindStringSubmatch(list)
	if id == nil {
		t.Fatalf("no id for ci in:\n%s", list)
	}
	runOK(t, env, "token", "revoke", id[1])
	list = runOK(t, env, "token", "list", "--account", "globex")
	line := regexp.MustCompile(`(?m)^` + id[1] + `\s+ci\s.*$`).FindString(list)
	if n := len(regexp.MustCompile(`\d{4}-\d\d-\d\dT`).FindAllString(line, -1)); n != 2 {
		t.Fatalf("revoked token should show expiry and revocation times:\n%s", list)
	}
	var out2 syncBuffer
	if err := run(context.Background(), []string{"token", "create", "--account", "nobody", "--permission", "*"}, envOf(env), &out2); err == nil {
		t.Fatal("token create for an unknown account succeeded")
	}
}

func TestUnknownCommand(t *testing.T) {
	var out syncBuffer
	if err := run(context.Background(), []string{"frobnicate"}, envOf(nil), &out); err == nil {
		t.Fatal("unknown command accepted")
	}
}

// TestMigrateFlagsAfterAction: `migrate status --database-url X` reads the
// flag after the action.
func TestMigrateFlagsAfterAction(t *testing.T) {
	db := storagetest.New(t)
	out := runOK(t, nil, "migrate", "status", "--database-url", db.URL)
	if !strings.Contains(out, "applied") {
		t.Fatalf("status of the given database: %s", out)
	}
}
