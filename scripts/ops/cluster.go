package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// cluster is the run's private PostgreSQL; server changes at each start.
type cluster struct {
	dir     string
	mu      sync.Mutex
	server  *pgserver.Server
	running bool
	frozen  bool
}

func startCluster(ctx context.Context, e *env) (*cluster, error) {
	c := &cluster{dir: filepath.Join(e.work, "pg")}
	if err := c.start(ctx, e); err != nil {
		return nil, err
	}
	e.onClose(func() {
		if c.frozen {
			_ = c.signal(syscall.SIGCONT)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.running {
			if err := c.server.Stop(); err != nil {
				e.logf("stop the private cluster: %v", err)
				return
			}
			c.running = false
			e.logf("stopped the private PostgreSQL cluster")
		}
	})
	e.logf("private PostgreSQL cluster in %s (unix socket only)", c.dir)
	return c, nil
}

func (c *cluster) start(ctx context.Context, e *env) error {
	logf, err := os.OpenFile(filepath.Join(e.work, "pg-ctl.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	s, err := pgserver.StartPrivateCluster(ctx, c.dir, logf)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.server, c.running = s, true
	c.mu.Unlock()
	return nil
}

// signal sends sig to the cluster's postmaster and its children (found
// through /proc), which the run started itself.
func (c *cluster) signal(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return fmt.Errorf("postmaster.pid: %w", err)
	}
	pids := []int{pm}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so read after ")".
		i := strings.LastIndexByte(string(b), ')')
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pm) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
	}
	c.frozen = sig == syscall.SIGSTOP
	return nil
}

func (c *cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.server.Stop(); err != nil {
		return err
	}
	c.running = false
	return nil
}
