// Package pgserver finds the PostgreSQL server that fleetapi uses, or
// starts a private cluster of its own from the locally installed binaries
// (docs/design.md §7). It is a trusted job of the command line and the test helper
// (`fleetapi dev`, storagetest, the operations tool), never used on the
// request path: it manages a server process and reads no tenant data.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// Server is a PostgreSQL server that fleetapi can use: one it was told
// about, one that already listens on 127.0.0.1:5432, or a private cluster
// it started itself (docs/design.md §7).
type Server struct {
	// URL connects to the fleetapi database on the server.
	URL string
	// Private is true when the server is a cluster started by Find.
	Private bool
	stop    func() error
	// ctl runs pg_ctl on the cluster (nil when it is not ours to manage);
	// sock is its socket folder.
	ctl  *pgctl
	sock string
}

// Stop stops a private cluster; it does nothing for other servers.
func (s *Server) Stop() error {
	if s.stop == nil {
		return nil
	}
	return s.stop()
}

// Find finds PostgreSQL as docs/design.md §7 says: databaseURL when it is not
// empty; else a server on 127.0.0.1:5432; else a private cluster started
// from the locally installed binaries in dataDir, on a unix socket. Progress
// is written to log.
func Find(ctx context.Context, databaseURL, dataDir string, log io.Writer) (*Server, error) {
	if databaseURL != "" {
		return &Server{URL: databaseURL}, nil
	}
	d := net.Dialer{Timeout: time.Second}
	if c, err := d.DialContext(ctx, "tcp", "127.0.0.1:5432"); err == nil {
		c.Close()
		return &Server{URL: storage.DefaultURL}, nil
	}
	return StartPrivateCluster(ctx, dataDir, log)
}

// pgBinDir finds the directory holding initdb and pg_ctl.
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		// A pg_ctl linked onto PATH names the folder of the installation's
		// other programs (initdb, pg_basebackup) through its link.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if _, err := os.Stat(filepath.Join(filepath.Dir(real), "initdb")); err == nil {
				return filepath.Dir(real), nil
			}
		}
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	for i := len(matches) - 1; i >= 0; i-- { // newest version first
		dir := filepath.Dir(matches[i])
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("no PostgreSQL found: nothing listens on 127.0.0.1:5432, FLEET_DATABASE_URL is not set, and initdb/pg_ctl are not installed")
}

// StartPrivateCluster starts (initialising it on first use) a PostgreSQL
// cluster of the project's own in dataDir, listening only on a unix socket
// there, from the locally installed binaries. When the cluster already
// runs it is shared and the returned Server does not stop it.
func StartPrivateCluster(ctx context.Context, dataDir string, log io.Writer) (*Server, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	d, err := newClusterDir(dataDir)
	if err != nil {
		return nil, err
	}
	pgdata, sock := d.pgdata, d.sock
	// initdb refuses to run as root: run the cluster as the postgres user then.
	runAs, err := clusterUser(d.dir)
	if err != nil {
		return nil, err
	}
	ctl := &pgctl{bin: bin, runAs: runAs, pgdata: pgdata, sock: sock, logFile: d.logFile}
	cmd := func(name string, args ...string) *exec.Cmd { return ctl.command(ctx, name, args...) }
	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); err != nil {
		fmt.Fprintf(log, "initialising a private PostgreSQL cluster in %s\n", pgdata)
		if out, err := cmd("initdb", "-D", pgdata, "-U", "postgres", "--auth=trust", "--no-sync").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %w: %s", err, out)
		}
	}
	u := socketURL(sock)
	if cmd("pg_ctl", "-D", pgdata, "status").Run() == nil {
		// Already running (another process of ours started it): share it,
		// and leave stopping it to its owner.
		return &Server{URL: u, Private: true}, nil
	}
	fmt.Fprintf(log, "starting the private PostgreSQL cluster (socket in %s)\n", sock)
	if err := ctl.start(ctx); err != nil {
		return nil, err
	}
	return &Server{URL: u, Private: true, stop: func() error { return ctl.stop("fast") }, ctl: ctl, sock: sock}, nil
}

// socketURL is the URL of the fleetapi database on the cluster whose unix
// socket is in the folder sock.
func socketURL(sock string) string {
	q := url.Values{"host": {filepath.Join(sock, ".s.PGSQL.5432")}, "sslmode": {"disable"}}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/fleetapi", RawQuery: q.Encode()}
	return u.String()
}

// pgctl runs the installed PostgreSQL programs on one private cluster, as
// the user that owns it.
type pgctl struct {
	bin, runAs, pgdata, sock, logFile string
	// extra holds more server options for start (-c name=value ...).
	extra string
}

// command is the program name of bin with args, run as runAs.
func (c *pgctl) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	path := filepath.Join(c.bin, name)
	if c.runAs != "" {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", path}, args...)...)
	}
	return exec.CommandContext(ctx, path, args...)
}

// start starts the cluster on its unix socket only and waits until it
// accepts connections (a standby: until it is consistent).
func (c *pgctl) start(ctx context.Context) error {
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=off%s", c.sock, c.extra)
	if out, err := c.command(ctx, "pg_ctl", "-D", c.pgdata, "-l", c.logFile, "-o", opts, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start: %w: %s (see %s)", err, out, c.logFile)
	}
	return nil
}

// stop stops the cluster with pg_ctl's shutdown mode (fast, immediate).
func (c *pgctl) stop(mode string) error {
	out, err := c.command(context.Background(), "pg_ctl", "-D", c.pgdata, "-m", mode, "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w: %s", mode, err, out)
	}
	return nil
}

// clusterUser returns the user to run initdb and pg_ctl as ("" for the
// current one) and hands dir to that user.
func clusterUser(dir string) (string, error) {
	if os.Geteuid() != 0 {
		return "", nil
	}
	pg, err := PostgresCredential()
	if err != nil {
		return "", fmt.Errorf("running as root and there is no postgres user to run a private cluster as: %w", err)
	}
	err = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(pg.Uid), int(pg.Gid))
	})
	return "postgres", err
}
