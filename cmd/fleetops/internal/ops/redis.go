package ops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// sharedRedis is the Redis the tests and .ci/run use.
const sharedRedis = "127.0.0.1:6379"

// redisProcess is a redis-server a run started itself.
type redisProcess struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// stop ends the redis-server (SIGTERM, then SIGKILL after 5 s).
func (p *redisProcess) stop() { stopProcess(p.cmd, p.done, 5*time.Second) }

// listening reports whether something accepts connections on addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// freePort returns a loopback address with a port free at the time.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startRedis starts redis-server on the loopback address addr as .ci/run
// does (no persistence), its files in the work folder, stopped when the
// run ends, and waits up to 15 s until it listens.
func (e *env) startRedis(ctx context.Context, addr string) (*redisProcess, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("no redis-server to start on %s", addr)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(e.work, "redis-"+port)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &redisProcess{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	e.onClose(p.stop)
	for range 150 {
		if listening(addr) {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.done:
			return nil, fmt.Errorf("redis-server on %s exited at start", addr)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("redis-server on %s did not come up within 15 s", addr)
}

// ensureRedis makes sure a Redis answers on 127.0.0.1:6379, starting one
// for the run when none does.
func (e *env) ensureRedis(ctx context.Context) error {
	if listening(sharedRedis) {
		e.logf("Redis listens on %s", sharedRedis)
		return nil
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return errors.New("no Redis on 127.0.0.1:6379 and no redis-server to start")
	}
	p, err := e.startRedis(ctx, sharedRedis)
	if err != nil {
		return err
	}
	e.logf("started redis-server (pid %d) on %s; stopped at the end of the run", p.cmd.Process.Pid, sharedRedis)
	return nil
}

// startPrivateRedis starts a Redis of the run's own on addr (a free
// loopback port when empty), so that stopping it touches nobody else's
// limits.
func (e *env) startPrivateRedis(ctx context.Context, addr string) (*redisProcess, error) {
	if addr == "" {
		var err error
		if addr, err = freePort(); err != nil {
			return nil, err
		}
	}
	return e.startRedis(ctx, addr)
}
