package e2e_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The reference verifier (issue 37): web/webhook-receiver.mjs checks
// deliveries with the npm package standardwebhooks, a Standard Webhooks
// implementation nobody on this project wrote. These helpers find node
// and python3 and start the receiver.

// tool returns the path of an interpreter the webhook tests need. Missing,
// it fails the test under CI=true (.ci/run) and skips it elsewhere.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %s is not installed: the webhook verifier tests need it", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return p
}

// webDir returns the absolute path of web/ with its node_modules holding
// standardwebhooks: .ci/openapi-lint runs npm ci there before the tests;
// when the package is missing (a fresh checkout), this runs npm ci itself.
func webDir(t *testing.T) string {
	t.Helper()
	tool(t, "node")
	dir, err := filepath.Abs(filepath.Join("..", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json")); err == nil {
		return dir
	}
	npm := tool(t, "npm")
	cmd := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in web/: %v\n%s", err, out)
	}
	return dir
}

// receiverLine is one line of web/webhook-receiver.mjs's log.
type receiverLine struct {
	ID         string `json:"id"`
	Valid      bool   `json:"valid"`
	Verified   []bool `json:"verified"`
	Type       string `json:"type"`
	Error      string `json:"error"`
	Timestamp  string `json:"timestamp"`
	DataID     *int64 `json:"data_id"`
	CreatedAt  string `json:"created_at"`
	ReceivedAt int64  `json:"received_at"`
	Status     int    `json:"status"`
	Body       string `json:"body"` // with --log-bodies
}

// nodeReceiver is a running web/webhook-receiver.mjs.
type nodeReceiver struct {
	URL string
	mu  sync.Mutex
	log []receiverLine
	out strings.Builder // lines that are not requests (diagnostics)
}

// startReceiver starts web/webhook-receiver.mjs on a free port of
// 127.0.0.1 with the given secrets (in that order: Verified follows it)
// and stops it when the test ends.
func startReceiver(t *testing.T, secrets ...string) *nodeReceiver {
	t.Helper()
	var args []string
	for _, s := range secrets {
		args = append(args, "--secret", s)
	}
	return startReceiverArgs(t, args...)
}

// startReceiverArgs is startReceiver with the receiver's arguments.
func startReceiverArgs(t *testing.T, args ...string) *nodeReceiver {
	t.Helper()
	dir := webDir(t)
	cmd := exec.Command(tool(t, "node"), append([]string{filepath.Join(dir, "webhook-receiver.mjs")}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRETS=")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &nodeReceiver{}
	listening := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l struct {
				Listening string `json:"listening"`
				receiverLine
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				r.mu.Lock()
				r.out.WriteString(sc.Text() + "\n")
				r.mu.Unlock()
				continue
			}
			if l.Listening != "" {
				listening <- l.Listening
				continue
			}
			r.mu.Lock()
			r.log = append(r.log, l.receiverLine)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("webhook-receiver did not stop on SIGTERM")
		}
		_ = cmd.Wait()
	})
	select {
	case addr := <-listening:
		r.URL = "http://" + addr + "/hook"
	case <-done:
		t.Fatalf("webhook-receiver exited before listening:\n%s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("webhook-receiver did not listen within 30 s:\n%s", stderr.String())
	}
	return r
}

// lines returns the request lines logged so far.
func (r *nodeReceiver) lines() []receiverLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receiverLine(nil), r.log...)
}

// waitFor waits up to d for a logged request that match accepts and
// returns it.
func (r *nodeReceiver) waitFor(t *testing.T, d time.Duration, what string, match func(receiverLine) bool) receiverLine {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, l := range r.lines() {
			if match(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver logged no %s within %s; it logged %+v", what, d, r.lines())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
