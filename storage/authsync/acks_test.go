package authsync_test

import (
	"context"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/authsync"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestAwaitAuthAcksWaitsOutALease: a replica with a live lease that does
// not acknowledge (a row written in SQL, as a frozen listener leaves it) is
// waited for until its lease ends, not a moment less (judged on the
// database's clock, the lease's own), and a replica whose lease has ended
// is not waited for.
func TestAwaitAuthAcksWaitsOutALease(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	if _, err := db.ExecContext(ctx, `INSERT INTO fleet_auth_replicas (id, name, lease_until, acked_seq) VALUES
		('frozen', 'frozen replica', now() + interval '700 milliseconds', 0),
		('gone', 'gone replica', now() - interval '1 second', 0)`); err != nil {
		t.Fatal(err)
	}
	res := authsync.AwaitAcks(ctx, db.DB)
	if res.Err != nil || res.Seq == 0 {
		t.Fatalf("wait: %+v", res)
	}
	var over bool
	if err := db.NewRaw("SELECT lease_until <= now() FROM fleet_auth_replicas WHERE id = 'frozen'").Scan(ctx, &over); err != nil {
		t.Fatal(err)
	}
	if !over {
		t.Fatalf("the wait ended (%+v) while the unacknowledged replica's lease was live", res)
	}
	// Acknowledged replicas are not waited for.
	if _, err := db.ExecContext(ctx, `UPDATE fleet_auth_replicas SET lease_until = now() + interval '1 hour', acked_seq = 1000000`); err != nil {
		t.Fatal(err)
	}
	if res := authsync.AwaitAcks(ctx, db.DB); res.Err != nil || len(res.Unacked) != 0 {
		t.Fatalf("with every live lease acknowledged: %+v", res)
	}
}

// TestAwaitAuthAcksDatabaseGone: when the database cannot be reached after
// the change, the wait takes its whole bound (DefaultLease), after
// which every replica has applied the change or stopped trusting its
// cache, and reports the error.
func TestAwaitAuthAcksDatabaseGone(t *testing.T) {
	db := storage.Open("postgres://postgres@127.0.0.1:1/fleetapi?sslmode=disable", storage.Options{MaxOpenConns: 1})
	defer db.Close()
	res := authsync.AwaitAcks(context.Background(), db)
	if res.Err == nil {
		t.Fatalf("no error from an unreachable database: %+v", res)
	}
	if res.Waited < authsync.DefaultLease {
		t.Fatalf("waited %s with the database gone, want the whole bound %s", res.Waited, authsync.DefaultLease)
	}
}
