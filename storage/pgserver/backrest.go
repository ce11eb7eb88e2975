package pgserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BackRestStanza is the pgBackRest stanza of an HACluster's repository.
const BackRestStanza = "fleet"

// writeBackRestConfigs writes one pgbackrest.conf per node and creates the
// repository's folders. The repository is one, shared by every node (a
// path every node mounts, docs/operations.md "Backups and point-in-time
// recovery"): a promoted standby archives into the stanza the first
// leader created (TestHAClusterArchivesAfterFailover). Each node's pg1 is
// its own data directory.
func (c *HACluster) writeBackRestConfigs() error {
	repo := filepath.Join(c.Dir, "backrest")
	for _, d := range []string{"repo", "log", "lock", "spool"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o750); err != nil {
			return err
		}
	}
	if err := c.chown(repo); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			return err
		}
		cfg := fmt.Sprintf(`[global]
repo1-path=%[1]s/repo
repo1-retention-full=2
log-path=%[1]s/log
lock-path=%[1]s/lock
spool-path=%[1]s/spool
log-level-console=warn
log-level-file=info
start-fast=y
compress-type=lz4
process-max=1

[%[2]s]
pg1-path=%[3]s
pg1-port=%[4]d
pg1-socket-path=%[5]s
pg1-user=postgres
`, repo, BackRestStanza, filepath.Join(n.dir, "data"), n.pgPort, n.dir)
		if err := os.WriteFile(filepath.Join(n.dir, "pgbackrest.conf"), []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// backRest runs pgbackrest with the leader's configuration (as the
// postgres user when we are root).
func (c *HACluster) backRest(ctx context.Context, args ...string) error {
	leader := c.Leader()
	if leader < 0 {
		return fmt.Errorf("pgbackrest %s: no leader", strings.Join(args, " "))
	}
	return c.backRestOn(ctx, leader, args...)
}

func (c *HACluster) backRestOn(ctx context.Context, node int, args ...string) error {
	bin, err := lookPath("pgbackrest")
	if err != nil {
		return err
	}
	full := append([]string{"--config=" + filepath.Join(c.nodes[node].dir, "pgbackrest.conf"), "--stanza=" + BackRestStanza}, args...)
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Dir = c.Dir
	if c.runAs != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", bin}, full...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgbackrest %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Backup takes a pgBackRest backup of the leader while it runs: kind is
// "full", "diff" or "incr". The cluster needs HAOptions.Archive. It runs a
// CHECKPOINT on the leader first, as docs/operations.md's schedule does:
// until the end-of-recovery checkpoint of a promoted standby, pgBackRest
// refuses its backup ("WAL timeline 2 does not match pg_control timeline
// 1").
func (c *HACluster) Backup(ctx context.Context, kind string) error {
	if !c.opts.Archive {
		return fmt.Errorf("backup: the cluster was started without archiving")
	}
	leader := c.Leader()
	if leader < 0 {
		return fmt.Errorf("backup: no leader")
	}
	if _, err := c.psql(ctx, leader, "CHECKPOINT"); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return c.backRestOn(ctx, leader, "--type="+kind, "backup")
}

// BackRestInfo returns `pgbackrest info --output=json` (the backups in the
// repository and the WAL range archived).
func (c *HACluster) BackRestInfo(ctx context.Context) (string, error) {
	bin, err := lookPath("pgbackrest")
	if err != nil {
		return "", err
	}
	leader := max(c.Leader(), 0)
	cmd := exec.CommandContext(ctx, bin, "--config="+filepath.Join(c.nodes[leader].dir, "pgbackrest.conf"), "--stanza="+BackRestStanza,
		"--output=json", "info")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("pgbackrest info: %w", err)
	}
	return string(out), nil
}

// Restore restores the repository's backups into a new data directory in
// dir, recovering up to target (pgBackRest --type=time, with
// recovery_target_inclusive on and the promote action), and starts it as
// a stand-alone server on a unix socket there. It returns that server once
// it is promoted (accepts writes); Stop stops it.
func (c *HACluster) Restore(ctx context.Context, dir string, target time.Time) (*Server, error) {
	d, err := newClusterDir(dir)
	if err != nil {
		return nil, err
	}
	dir, pgdata, sock := d.dir, d.pgdata, d.sock
	if err := os.MkdirAll(pgdata, 0o700); err != nil {
		return nil, err
	}
	if err := c.chown(dir); err != nil {
		return nil, err
	}
	leader := max(c.Leader(), 0)
	stamp := target.UTC().Format("2006-01-02 15:04:05.000000") + "+00"
	if err := c.backRestOn(ctx, leader, "--pg1-path="+pgdata, "--type=time", "--target="+stamp,
		"--target-action=promote", "--target-timeline=current", "restore"); err != nil {
		return nil, err
	}
	runAs := ""
	if c.runAs != nil {
		runAs = "postgres"
	}
	ctl := &pgctl{bin: c.bin, runAs: runAs, pgdata: pgdata, sock: sock, logFile: d.logFile,
		// The restored configuration is the node's (its TCP port, its
		// archive_command): this server is a scratch copy, on its socket
		// only, archiving nothing.
		// Patroni's synchronous_standby_names would make every commit
		// wait for a standby this copy does not have; its hba_file names
		// the node's folder.
		extra: fmt.Sprintf(" -c port=5432 -c archive_mode=off -c hot_standby=on -c synchronous_standby_names='' -c hba_file=%s -c ident_file=%s",
			filepath.Join(pgdata, "pg_hba.conf"), filepath.Join(pgdata, "pg_ident.conf"))}
	if err := ctl.start(ctx); err != nil {
		return nil, err
	}
	s := &Server{URL: socketURL(sock), Private: true, stop: func() error { return ctl.stop("immediate") }, ctl: ctl, sock: sock}
	err = waitFor(ctx, 120*time.Second, "promotion of the restored server", func() bool {
		out, err := ctl.command(ctx, "psql", "-X", "-A", "-t", "-h", sock, "-U", "postgres", "-d", "postgres",
			"-c", "SELECT pg_is_in_recovery()").Output()
		return err == nil && strings.TrimSpace(string(out)) == "f"
	})
	if err != nil {
		_ = s.Stop()
		b, _ := os.ReadFile(ctl.logFile)
		return nil, fmt.Errorf("%w: %s", err, tail(string(b), 2000))
	}
	return s, nil
}

// ArchiveCheck runs pgbackrest check: the leader archives WAL into the
// repository and the repository is valid.
func (c *HACluster) ArchiveCheck(ctx context.Context) error { return c.backRest(ctx, "check") }

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// Port returns node i's PostgreSQL TCP port (for tests that connect to a
// node directly).
func (c *HACluster) Port(i int) string { return strconv.Itoa(c.nodes[i].pgPort) }
