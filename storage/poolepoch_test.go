package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// backends checks out n connections of db at once and returns their
// server process ids.
func backends(t *testing.T, db *bun.DB, n int) map[int]bool {
	t.Helper()
	ctx := context.Background()
	pids := map[int]bool{}
	var conns []bun.Conn
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var pid int
		if err := c.NewRaw("SELECT pg_backend_pid()").Scan(ctx, &pid); err != nil {
			t.Fatal(err)
		}
		pids[pid] = true
	}
	for _, c := range conns {
		_ = c.Close()
	}
	return pids
}

// TestReadOnlyErrorDiscardsPooledConns: when a write on a pool fails with
// SQLSTATE 25006 (the address reaches a standby: the primary behind it was
// demoted), none of the pool's connections made before is handed out
// again; they all were made to the server that is now read-only (docs/design.md
// §13). On the old main the pool kept them (pgdriver closes a connection
// on FATAL and network errors, not on 25006).
func TestReadOnlyErrorDiscardsPooledConns(t *testing.T) {
	r := storagetest.NewReplicated(t)
	ctx := context.Background()
	// A pool whose address reaches the standby: a primary's pool after
	// its server was demoted.
	db := storage.Open(r.StandbyURL, storage.Options{MaxOpenConns: 4})
	defer db.Close()
	before := backends(t, db, 3)
	if again := backends(t, db, 3); len(again) != 3 || !sameKeys(before, again) {
		t.Fatalf("the pool did not reuse its idle connections (%v, then %v): the test proves nothing", before, again)
	}
	_, err := db.ExecContext(ctx, "CREATE TABLE failover_probe (id int)")
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) || pgErr.Field('C') != "25006" {
		t.Fatalf("a write on the standby: %v, want SQLSTATE 25006", err)
	}
	if !errors.Is(storage.Translate(err), storage.ErrUnavailable) {
		t.Errorf("25006 translates to %v, want ErrUnavailable (503)", storage.Translate(err))
	}
	after := backends(t, db, 3)
	for pid := range after {
		if before[pid] {
			t.Errorf("backend %d, connected before the read-only error, handed out again", pid)
		}
	}
}

func sameKeys(a, b map[int]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
