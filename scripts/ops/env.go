package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// env is the workplace of one run: the module root, a work folder holding
// the built binary and the replicas' logs, and the clean-ups to run at the
// end, last registered first.
type env struct {
	root     string
	work     string
	bin      string
	common   common
	out      io.Writer
	start    time.Time
	mu       sync.Mutex
	cleanups []func()
}

// newEnv finds the module root, makes the work folder and builds
// ./cmd/fleetapi into it.
func newEnv(ctx context.Context, name string, c common, out io.Writer) (*env, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "fleetapi-ops-"+name+"-")
	if err != nil {
		return nil, err
	}
	// A private cluster runs as the postgres user, which must traverse it.
	if err := os.Chmod(work, 0o755); err != nil {
		return nil, err
	}
	e := &env{root: root, work: work, bin: filepath.Join(work, "fleetapi"), common: c, out: out, start: time.Now()}
	e.onClose(func() {
		if c.keep {
			e.logf("work folder kept: %s", work)
			return
		}
		_ = os.RemoveAll(work)
	})
	e.logf("machine: %d cores, load average %s (other work on the machine skews the figures)", runtime.NumCPU(), loadAverage())
	e.logf("building ./cmd/fleetapi into %s", work)
	build := exec.CommandContext(ctx, "go", "build", "-o", e.bin, "./cmd/fleetapi")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		e.close()
		return nil, fmt.Errorf("go build ./cmd/fleetapi: %w\n%s", err, b)
	}
	return e, nil
}

// loadAverage is the first three fields of /proc/loadavg ("" elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// moduleRoot walks up from the working directory to fleetapi's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/fleetapi/fleetapi\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the fleetapi module (no go.mod of github.com/fleetapi/fleetapi above the working directory)")
		}
		dir = parent
	}
}

// onClose registers f to run when the run ends.
func (e *env) onClose(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, f)
}

// close runs the clean-ups, last registered first.
func (e *env) close() {
	e.mu.Lock()
	fs := e.cleanups
	e.cleanups = nil
	e.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// logf prints a progress line with the time since the run started.
func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.out, "[%6.1fs] %s\n", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
}

// printf prints a result line as it is.
func (e *env) printf(format string, args ...any) {
	fmt.Fprintf(e.out, format, args...)
}

// fleet runs the fleetapi binary with args against the database at dbURL
// and returns its output.
func (e *env) fleet(ctx context.Context, dbURL string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(cleanEnviron(), "FLEET_DATABASE_URL="+dbURL)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return string(b), fmt.Errorf("fleetapi %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return string(b), nil
}

// cleanEnviron is the process environment without FLEET_* and OTEL_*
// variables, so that a run's replicas get exactly the configuration it sets.
func cleanEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "FLEET_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// freshDatabase drops and re-creates (through the import) database name on
// the shared server, loads the demo data into it, and drops it at the end.
// It returns the database's URL.
func (e *env) freshDatabase(ctx context.Context, name string) (string, error) {
	if !strings.HasPrefix(name, "fleetapi_ops") {
		return "", fmt.Errorf("refusing to manage database %q: only fleetapi_ops* databases are the runs' own", name)
	}
	url, err := storage.WithDatabase(e.common.adminURL, name)
	if err != nil {
		return "", err
	}
	drop := func(ctx context.Context) error {
		db := storage.Open(e.common.adminURL, storage.Options{MaxOpenConns: 1})
		defer db.Close()
		_, err := db.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`)
		return err
	}
	if err := drop(ctx); err != nil {
		return "", fmt.Errorf("drop database %s: %w", name, err)
	}
	e.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := drop(ctx); err != nil {
			e.logf("drop database %s: %v", name, err)
			return
		}
		e.logf("dropped database %s", name)
	})
	if err := e.importDemo(ctx, url); err != nil {
		return "", err
	}
	e.logf("database %s created with the demo data", name)
	return url, nil
}

// importDemo loads storage/demodata/demodata.json (migrating first).
func (e *env) importDemo(ctx context.Context, dbURL string) error {
	_, err := e.fleet(ctx, dbURL, "import", filepath.Join(e.root, "storage", "demodata", "demodata.json"))
	return err
}

// token is an API token created for a run.
type token struct {
	ID     int64
	Secret string
}

var tokenLine = regexp.MustCompile(`(?m)^token (\d+) .*\n(flt_[0-9A-Za-z]{32})\s*$`)

// createToken creates a token with every permission for account; a
// rateLimit of 0 leaves the server's default.
func (e *env) createToken(ctx context.Context, dbURL, account, name string, rateLimit int) (token, error) {
	args := []string{"token", "create", "--account", account, "--permission", "*", "--name", name}
	if rateLimit > 0 {
		args = append(args, "--rate-limit", strconv.Itoa(rateLimit))
	}
	out, err := e.fleet(ctx, dbURL, args...)
	if err != nil {
		return token{}, err
	}
	m := tokenLine.FindStringSubmatch(out)
	if m == nil {
		return token{}, fmt.Errorf("token create: no token in the output:\n%s", out)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return token{ID: id, Secret: m[2]}, nil
}

// listening reports whether something accepts connections on addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// ensureRedis makes sure a Redis answers on 127.0.0.1:6379, starting
// redis-server as .ci/run does (without persistence) when none does; a
// Redis started here is stopped at the end.
func (e *env) ensureRedis(ctx context.Context) error {
	const addr = "127.0.0.1:6379"
	if listening(addr) {
		e.logf("Redis listens on %s", addr)
		return nil
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return errors.New("no Redis on 127.0.0.1:6379 and no redis-server to start")
	}
	dir := filepath.Join(e.work, "redis")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", "6379", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	e.onClose(func() { stopProcess(cmd, done, 5*time.Second); e.logf("stopped the Redis started for this run") })
	for range 150 {
		if listening(addr) {
			e.logf("started redis-server (pid %d) on %s", cmd.Process.Pid, addr)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return errors.New("redis-server exited at start")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("redis-server did not come up within 15 s")
}

// logLine is the part of a fleetapi JSON log line the runs read.
type logLine struct {
	Msg  string `json:"msg"`
	Addr string `json:"addr"`
}

// replica is one running `fleetapi serve`.
type replica struct {
	name    string
	addr    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
}

// base is the replica's URL.
func (r *replica) base() string { return "http://" + r.addr }

// startReplica starts `fleetapi serve` on a free loopback port with the
// FLEET_*/OTEL_* variables of vars, its output in the work folder, and
// waits until it listens.
func (e *env) startReplica(ctx context.Context, name string, vars map[string]string) (*replica, error) {
	r := &replica{name: name, logPath: filepath.Join(e.work, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.bin, "serve", "--allow-demo-tokens") // its databases hold the demo data
	cmd.Env = append(cleanEnviron(), "FLEET_ADDR=127.0.0.1:0")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C of the run does not reach the replica
	// before the run stops it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	r.cmd = cmd
	go func() { r.exitErr = cmd.Wait(); logFile.Close(); close(r.done) }()
	e.onClose(func() {
		if r.running() {
			stopProcess(cmd, r.done, 20*time.Second)
			e.logf("stopped replica %s", name)
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if addr := findListening(r.logPath); addr != "" {
			r.addr = addr
			e.logf("replica %s (pid %d) listens on %s; log %s", name, cmd.Process.Pid, addr, r.logPath)
			return r, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-r.done:
			b, _ := os.ReadFile(r.logPath)
			return nil, fmt.Errorf("replica %s exited at start: %v\n%s", name, r.exitErr, b)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("replica %s did not log \"listening\" within 90 s (log %s)", name, r.logPath)
}

func findListening(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" && l.Addr != "" {
			return l.Addr
		}
	}
	return ""
}

func (r *replica) running() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// terminate sends SIGTERM and waits up to timeout for the replica to exit
// (then kills it). It returns how long the exit took and the exit error.
func (r *replica) terminate(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if !stopProcess(r.cmd, r.done, timeout) {
		return time.Since(start), fmt.Errorf("replica %s did not exit within %s after SIGTERM and was killed", r.name, timeout)
	}
	return time.Since(start), r.exitErr
}

// logLines returns the replica's log lines whose "msg" is msg.
func (r *replica) logLines(msg string) []map[string]any {
	f, err := os.Open(r.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// stopProcess sends SIGTERM to cmd's process and waits for done up to
// timeout, then kills it. It reports whether the process exited by itself.
func stopProcess(cmd *exec.Cmd, done <-chan struct{}, timeout time.Duration) bool {
	select {
	case <-done:
		return true
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}
