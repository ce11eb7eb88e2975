package pgserver_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// startHA starts an HA cluster for the test, stopped at its end; it skips
// without the programs, except with CI=true.
func startHA(t *testing.T, opts pgserver.HAOptions) *pgserver.HACluster {
	t.Helper()
	opts.Log = testLog{t}
	c, err := pgserver.StartHACluster(context.Background(), "", opts)
	if err != nil {
		if os.Getenv("CI") != "true" && errors.Is(err, pgserver.ErrHANotInstalled) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) { l.t.Log(string(b)); return len(b), nil }

// TestHAClusterFailsOver: killing the leader makes the other node the
// leader, reachable through the same HAProxy address.
func TestHAClusterFailsOver(t *testing.T) {
	ctx := context.Background()
	c := startHA(t, pgserver.HAOptions{})
	if err := storage.EnsureDatabase(ctx, c.URL); err != nil {
		t.Fatal(err)
	}
	db := storage.Open(c.URL, storage.Options{MaxOpenConns: 2})
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	old := c.Leader()
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err == nil {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatal("no writes 60 s after the leader was killed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("writes again %s after the kill", time.Since(start))
	if l := c.Leader(); l == old || l < 0 {
		t.Fatalf("leader %d after killing %d", l, old)
	}
	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestHAClusterArchivesAfterFailover (issue 34): with the one pgBackRest
// repository every node shares (docs/operations.md, "Backups and
// point-in-time recovery"), the standby promoted by a fail-over archives
// into it at once: pgbackrest check on the new leader (which switches a
// WAL segment and waits until it is archived) passes, and a backup taken
// from it joins the same stanza. With a repository per node the new
// primary's archive-push finds no stanza there ("archive.info missing"),
// its WAL piles up unarchived and the backups split.
func TestHAClusterArchivesAfterFailover(t *testing.T) {
	ctx := context.Background()
	c := startHA(t, pgserver.HAOptions{Archive: true})
	if err := c.ArchiveCheck(ctx); err != nil {
		t.Fatalf("archiving on the first leader: %v", err)
	}
	if err := c.Backup(ctx, "full"); err != nil {
		t.Fatal(err)
	}
	if err := storage.EnsureDatabase(ctx, c.URL); err != nil {
		t.Fatal(err)
	}
	db := storage.Open(c.URL, storage.Options{MaxOpenConns: 2})
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	old := c.Leader()
	if err := c.Kill(old); err != nil {
		t.Fatal(err)
	}
	for tries := 0; ; tries++ {
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err == nil {
			break
		}
		if tries > 600 {
			t.Fatal("no writes after the leader was killed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	leader := c.Leader()
	if leader == old || leader < 0 {
		t.Fatalf("leader %d after killing %d", leader, old)
	}
	if err := c.ArchiveCheck(ctx); err != nil {
		t.Fatalf("archiving on the promoted standby (node %d): %v", leader, err)
	}
	if err := c.Backup(ctx, "incr"); err != nil {
		t.Fatalf("a backup from the promoted standby: %v", err)
	}
	info, err := c.BackRestInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, `"type":"full"`) || !strings.Contains(info, `"type":"incr"`) {
		t.Fatalf("the shared repository lacks the first leader's full backup or the new leader's incremental one: %s", info)
	}
}

// TestHAClusterFrozenStandby: a synchronous standby that hangs (SIGSTOP of
// its Patroni and PostgreSQL) holds every commit until Patroni takes it
// out of synchronous_standby_names, once its member key expires (the TTL,
// 7 s): the writes wait, none fails, and they go on while it stays frozen
// (docs/scaling.md, "what fails over how"). It logs the longest write, the
// figure of that page.
func TestHAClusterFrozenStandby(t *testing.T) {
	ctx := context.Background()
	c := startHA(t, pgserver.HAOptions{})
	if err := storage.EnsureDatabase(ctx, c.URL); err != nil {
		t.Fatal(err)
	}
	// A read timeout above the stall: the test counts writes, it does not
	// time them against fleetapi's 10 s.
	db := storage.Open(c.URL, storage.Options{MaxOpenConns: 2, ReadTimeout: time.Minute})
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	leader := c.Leader()
	standby := 1 - leader
	if err := c.Freeze(standby); err != nil {
		t.Fatal(err)
	}
	var longest time.Duration
	written := 0
	for start := time.Now(); time.Since(start) < 15*time.Second; {
		began := time.Now()
		if _, err := db.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			t.Fatalf("a write with the synchronous standby frozen: %v", err)
		}
		written++
		longest = max(longest, time.Since(began))
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("synchronous standby frozen: longest write %.1f s, %d writes in 15 s, leader %d (was %d)", longest.Seconds(), written, c.Leader(), leader)
	if l := c.Leader(); l != leader {
		t.Fatalf("the leader changed (%d → %d) when only the standby froze", leader, l)
	}
	if err := c.Thaw(standby); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}
