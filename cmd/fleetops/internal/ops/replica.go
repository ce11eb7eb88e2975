package ops

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
)

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

// startReplicas starts one replica per name, each with vars (startReplica).
func (e *env) startReplicas(ctx context.Context, vars map[string]string, names ...string) ([]*replica, error) {
	reps := make([]*replica, len(names))
	for i, name := range names {
		r, err := e.startReplica(ctx, name, vars)
		if err != nil {
			return nil, err
		}
		reps[i] = r
	}
	return reps, nil
}

// startReplica starts `fleetapi serve` on a free loopback port with the
// FLEET_*/OTEL_* variables of vars, its output in the work folder, and
// waits until it listens (on loopback: any other address is refused).
func (e *env) startReplica(ctx context.Context, name string, vars map[string]string) (*replica, error) {
	r := &replica{name: name, logPath: filepath.Join(e.work, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.bin, "serve", "--allow-demo-tokens") // its databases hold the demo data
	cmd.Env = append(cleanEnviron(os.Environ()), "FLEET_ADDR=127.0.0.1:0")
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
			if err := cli.CheckAddr("replica "+name+" listens on", addr); err != nil {
				return nil, err
			}
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

// findListening returns the address of the first "listening" line of the
// JSON log at path, "" before there is one.
func findListening(path string) string {
	for _, l := range readLog(path, 1<<20) {
		if l["msg"] == "listening" {
			if addr, _ := l["addr"].(string); addr != "" {
				return addr
			}
		}
	}
	return ""
}

// readLog reads the JSON lines of the log at path (lines up to max bytes;
// other lines are passed over).
func readLog(path string, max int) []map[string]any {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseLog(f, max)
}

// parseLog is readLog on a reader.
func parseLog(r io.Reader, max int) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), max)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// running reports whether the replica's process has not exited yet.
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
	var out []map[string]any
	for _, l := range readLog(r.logPath, 4<<20) {
		if l["msg"] == msg {
			out = append(out, l)
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
