package ops

import (
	"context"
	"os"
	"path/filepath"
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

// demoCluster starts the run's private cluster with the demo data and
// creates a token with every permission for account, named name, with a
// limit the load never meets.
func demoCluster(ctx context.Context, e *env, account, name string) (*cluster, token, error) {
	pg, err := startCluster(ctx, e)
	if err != nil {
		return nil, token{}, err
	}
	if err := e.importDemo(ctx, pg.server.URL); err != nil {
		return nil, token{}, err
	}
	tok, err := e.createToken(ctx, pg.server.URL, account, name, 100_000_000)
	if err != nil {
		return nil, token{}, err
	}
	return pg, tok, nil
}

// startCluster starts the run's private cluster in the work folder,
// stopped (and thawed first if frozen) when the run ends.
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

// start starts the cluster (again), its pg_ctl output in the work folder.
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

// signal sends sig to the cluster's postmaster and its children, which
// the run started itself (pgserver.Signal).
func (c *cluster) signal(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := pgserver.Signal(c.dir, sig); err != nil {
		return err
	}
	c.frozen = sig == syscall.SIGSTOP
	return nil
}

// stop stops the cluster (pg_ctl stop -m fast).
func (c *cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.server.Stop(); err != nil {
		return err
	}
	c.running = false
	return nil
}
