package pgserver_test

import (
	"context"
	"errors"
	"os"
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
