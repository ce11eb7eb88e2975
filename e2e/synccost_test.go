package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
)

// BenchmarkCreateReplication measures what synchronous replication costs a
// passenger create (docs/design.md §13, docs/scaling.md): one client sends POST
// /passengers with an Idempotency-Key, one after the other, to fleetapi on
// a Patroni cluster of a primary and one standby, with
// synchronous_mode on (every commit waits until the standby has flushed its
// WAL) and off (asynchronous streaming, the "before"); and the commit
// alone (a single-row INSERT through HAProxy). Run with
//
//	CI=true go test ./e2e -run '^$' -bench CreateReplication -benchtime 1000x -count 3
func BenchmarkCreateReplication(b *testing.B) {
	for _, mode := range []struct {
		name  string
		async bool
	}{{"async", true}, {"sync", false}} {
		// Started on the parent: a sub-benchmark's function runs several
		// times (growing b.N), and its clean-ups after each run.
		c := startHA(b, pgserver.HAOptions{Async: mode.async})
		base := serve(b, c.URL, "FLEET_RATE_LIMIT=1000000")
		b.Run(mode.name, func(b *testing.B) {
			client := &http.Client{Timeout: 20 * time.Second}
			ctx := context.Background()
			run := time.Now().UnixNano()
			// Warm the connections and the caches.
			for i := range 20 {
				if status, _, body, err := post(ctx, client, base, fmt.Sprintf("warm-%d-%d", run, i)); err != nil || status != http.StatusCreated {
					b.Fatalf("warm-up create: %d %v %s", status, err, body)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if status, _, body, err := post(ctx, client, base, fmt.Sprintf("bench-%d-%d", run, i)); err != nil || status != http.StatusCreated {
					b.Fatalf("create: %d %v %s", status, err, body)
				}
			}
		})
		// The commit alone: one single-row INSERT per transaction through
		// HAProxy, without fleetapi's own work around it.
		db := storage.Open(c.URL, storage.Options{MaxOpenConns: 1})
		if _, err := db.ExecContext(context.Background(), "CREATE TABLE IF NOT EXISTS bench_commit (id bigint)"); err != nil {
			b.Fatal(err)
		}
		b.Run(mode.name+"-commit", func(b *testing.B) {
			ctx := context.Background()
			for i := range b.N {
				if _, err := db.ExecContext(ctx, "INSERT INTO bench_commit VALUES (?)", i); err != nil {
					b.Fatal(err)
				}
			}
		})
		db.Close()
		c.Stop() // one cluster at a time
	}
}
