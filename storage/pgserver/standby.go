package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Standby is a streaming replica (a hot standby) of a private cluster,
// started by StartStandby: a trusted job of the test helper and the
// operations tool, which stop and start it to show what the API does then.
type Standby struct {
	// URL connects to the fleetapi database on the standby.
	URL string
	ctl *pgctl
}

// StartStandby makes a streaming standby of primary, a private cluster
// that this process started (StartPrivateCluster), in dataDir: a base
// backup with pg_basebackup -R (which writes standby.signal and the
// primary_conninfo to the primary's unix socket) taken over the
// replication connection that initdb's trust pg_hba.conf allows on the
// socket, then started on a unix socket of its own in dataDir. An existing
// standby in dataDir is started again as it is. Progress goes to log.
func StartStandby(ctx context.Context, primary *Server, dataDir string, log io.Writer) (*Standby, error) {
	if primary.ctl == nil {
		return nil, errors.New("a standby needs a private primary started by this process")
	}
	d, err := newClusterDir(dataDir)
	if err != nil {
		return nil, err
	}
	runAs, err := clusterUser(d.dir)
	if err != nil {
		return nil, err
	}
	ctl := &pgctl{bin: primary.ctl.bin, runAs: runAs, pgdata: d.pgdata, sock: d.sock, logFile: d.logFile}
	if _, err := os.Stat(filepath.Join(ctl.pgdata, "PG_VERSION")); err != nil {
		fmt.Fprintf(log, "taking a base backup of the private cluster for a standby in %s\n", ctl.pgdata)
		out, err := ctl.command(ctx, "pg_basebackup", "-h", primary.sock, "-U", "postgres", "-D", ctl.pgdata,
			"-R", "-X", "stream", "-c", "fast", "--no-sync").CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("pg_basebackup: %w: %s", err, out)
		}
	}
	fmt.Fprintf(log, "starting the standby (socket in %s)\n", d.sock)
	if err := ctl.start(ctx); err != nil {
		return nil, err
	}
	return &Standby{URL: socketURL(d.sock), ctl: ctl}, nil
}

// Stop stops the standby with pg_ctl's shutdown mode: "fast", or
// "immediate" (no shutdown checkpoint: the server's processes quit at
// once, as in a crash).
func (s *Standby) Stop(mode string) error { return s.ctl.stop(mode) }

// Start starts the stopped standby again; it resumes streaming from the
// primary.
func (s *Standby) Start(ctx context.Context) error { return s.ctl.start(ctx) }

// StopAbandoned stops, with pg_ctl stop -m immediate, a private cluster or
// standby in dataDir that is still running although the process that
// started it is gone (a test binary killed before it could stop its
// clusters). It does nothing when no cluster runs there.
func StopAbandoned(dataDir string) error {
	bin, err := pgBinDir()
	if err != nil {
		return err
	}
	runAs, err := clusterUser(dataDir)
	if err != nil {
		return err
	}
	ctl := &pgctl{bin: bin, runAs: runAs, pgdata: filepath.Join(dataDir, "data")}
	if ctl.command(context.Background(), "pg_ctl", "-D", ctl.pgdata, "status").Run() != nil {
		return nil
	}
	return ctl.stop("immediate")
}
