package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/storage/synth"
)

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveFleetapi builds cmd/fleetapi and runs `fleetapi serve` on dbURL on a
// free port of 127.0.0.1, allowed to deliver webhooks to loopback over
// http, with a 3 s attempt timeout (a dead endpoint holds a send that
// long); it returns the origin and the process id, and stops the server
// when the test ends.
func serveFleetapi(t *testing.T, dbURL string) (string, int) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fleetapi")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/fleetapi/fleetapi/cmd/fleetapi").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLEET_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(env, "FLEET_DATABASE_URL="+dbURL, "FLEET_ADDR=127.0.0.1:0", "FLEET_DECISION_LOG=off",
		"FLEET_WEBHOOK_ALLOW_HTTP=true", "FLEET_WEBHOOK_ALLOW_NETS=127.0.0.0/8",
		"FLEET_WEBHOOK_TIMEOUT=3s", "FLEET_WEBHOOK_KEY="+base64.StdEncoding.EncodeToString(key))
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("fleetapi serve did not stop on SIGTERM\n%s", logs.String())
		}
	})
	listening := regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			return "http://" + m[1], cmd.Process.Pid
		}
		select {
		case err := <-exited:
			t.Fatalf("fleetapi serve exited: %v\n%s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("fleetapi serve did not start\n%s", logs.String())
	return "", 0
}

// TestWebhooksRunSmall runs the webhooks workload, briefly, in all three
// modes against a real `fleetapi serve` (its sender included) over the
// small generated data set: every delivery due to an answering endpoint
// arrives signed with its endpoint's secret, none is a duplicate, the
// dead mode holds its dead endpoints and still delivers to the others,
// the backlog drains, the drive posts without an error, the server's CPU
// per delivery is measured, and the harness leaves no webhook, rule or
// backlog notification behind.
func TestWebhooksRunSmall(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	cfg, err := synth.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	res, err := synth.Generate(ctx, db.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.jsonl")
	var lines bytes.Buffer
	for _, tok := range res.Tokens {
		b, _ := json.Marshal(tok)
		lines.Write(append(b, '\n'))
	}
	if err := os.WriteFile(tokens, lines.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	origin, pid := serveFleetapi(t, db.URL)

	table := filepath.Join(dir, "webhooks.md")
	var out bytes.Buffer
	args := []string{"--workload", "webhooks", "--url", origin, "--database-url", db.URL, "--tokens", tokens,
		"--server-pid", strconv.Itoa(pid), "--pool", "4", "--webhook-endpoints", "3", "--webhook-rate", "5",
		"--webhook-duration", "2s", "--webhook-wide", "6", "--webhook-dead", "2", "--webhook-backlog", "600",
		"--webhook-devices", "20", "--webhook-settle", "40s", "--webhook-drain-timeout", "10m", "--markdown", table}
	if err := Run(ctx, args, func(string) string { return "" }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	md, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(string(md), "\n") {
		cells := strings.Split(l, " | ")
		if len(cells) == 18 && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| run ") {
			rows[strings.TrimPrefix(cells[0], "| ")] = cells
		}
	}
	for _, name := range []string{"rate", "dead 0 of 6", "dead 2 of 6", "backlog"} {
		r := rows[name]
		if r == nil {
			t.Fatalf("no %s row:\n%s\n%s", name, md, text)
		}
		notifications, _ := strconv.Atoi(r[3])
		expected, _ := strconv.Atoi(r[4])
		delivered, _ := strconv.Atoi(r[5])
		switch {
		case name != "backlog" && (notifications == 0 || delivered != expected):
			t.Errorf("%s: %d notifications, %d of %d deliveries:\n%s", name, notifications, delivered, expected, text)
		case r[10] != "0" || r[11] != "0" || r[12] != "0":
			t.Errorf("%s: %s duplicates, %s bad signatures, %s drive errors, want none:\n%s", name, r[10], r[11], r[12], text)
		case r[16] == "-":
			t.Errorf("%s: no server CPU per delivery:\n%s", name, text)
		}
	}
	if b := rows["backlog"]; b[13] != "600" || strings.Contains(b[14], "not drained") {
		t.Errorf("backlog: %s queued, drain %s:\n%s", b[13], b[14], text)
	}
	if !strings.Contains(string(md), "Healthy endpoints' p99 with 2 of 6 dead over none dead") {
		t.Errorf("no healthy p99 ratio:\n%s", md)
	}
	var left int
	if err := db.NewRaw(`SELECT (SELECT count(*) FROM webhooks) + (SELECT count(*) FROM events WHERE name = ?)
  + (SELECT count(*) FROM notifications WHERE message = ?)`, benchRuleName, backlogMessage).Scan(ctx, &left); err != nil || left != 0 {
		t.Errorf("the harness left %d webhooks, rules or backlog notifications (%v)", left, err)
	}
}
