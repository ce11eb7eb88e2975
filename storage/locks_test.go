package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestEraseAndCounterFold: an erase holds count_generation from its delete
// of accounts to its commit (the trigger bumps it), and the fold of the
// counters' stripes takes the stripe rows no writer holds, then bumps
// count_generation too. With the erase's accounts deleted while a fold
// holds stripes of the erased accounts, each would wait for the other;
// the erase locks its subtree's counter rows right after its accounts
// (docs/locking.md), so the fold skips them. The test orders the race: a
// transaction holds count_generation, the erase runs until it waits for
// it, the fold runs until it waits too (or ends), then the transaction
// commits; both must succeed, without a deadlock for PostgreSQL to break.
func TestEraseAndCounterFold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	// acme's device counters spread over stripes, as writers through many
	// connections leave them.
	if _, err := db.ExecContext(ctx, `INSERT INTO account_row_counts (resource, account_id, slot, n, changes)
		SELECT 'objects', a.id, s, 0, 0 FROM accounts a, generate_series(0, 15) s WHERE a.username = 'acme'
		ON CONFLICT DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	hold, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if _, err := hold.ExecContext(ctx, "BEGIN; UPDATE count_generation SET generation = generation + 1"); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int, done <-chan error) { t.Helper(); waitForLockWaiters(t, db, n, done) }
	erased, folded := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := store.EraseAccount(ctx, "acme", false)
		erased <- err
	}()
	waiting(1, erased)
	go func() {
		_, err := store.FoldCounters(ctx)
		folded <- err
	}()
	waiting(2, folded)
	if _, err := hold.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-erased; err != nil {
		t.Errorf("erase: %v", err)
	}
	if err := <-folded; err != nil {
		t.Errorf("fold: %v", err)
	}
	var left int
	if err := db.NewRaw(`SELECT count(*) FROM account_row_counts WHERE account_id NOT IN (SELECT id FROM accounts)`).Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d counter rows of erased accounts left", left)
	}
}

// TestEraseNotPassedBySharedLocks: a row lock request that conflicts with
// none of the current holders takes the row past a waiting erase, so a
// stream of shared lockers (keyed creates holding their caller KEY SHARE,
// passenger creates on the shared quota path) starved an erase until its
// statement timed out (a 503 and nothing erased, seen in the api's
// TestEraseRacesCreatesOnEveryLevel under load). The erase gate
// (locks.go) queues them behind it. The test orders the race: a
// transaction holds acme KEY SHARE, as a keyed create in flight does; the
// erase waits for it; then a passenger create for acme (a SHARE lock on
// the shared quota path, which that holder does not block) starts. It must
// wait behind the erase, and find acme erased; it must not create a
// passenger while the erase waits.
func TestEraseNotPassedBySharedLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	acme := principalOf(t, store, "acme").Account
	scope := scopeOf(t, e, store, "acme", "passengers")
	hold, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if _, err := hold.ExecContext(ctx, fmt.Sprintf("BEGIN; SELECT id FROM accounts WHERE id = %d FOR KEY SHARE", acme.ID)); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int, done <-chan error) { t.Helper(); waitForLockWaiters(t, db, n, done) }
	erased, created := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := store.EraseAccount(ctx, "acme", false)
		erased <- err
	}()
	waiting(1, erased)
	go func() {
		_, _, err := store.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Past The Erase"}, nil)
		created <- err
	}()
	waiting(2, created)
	if len(created) > 0 {
		t.Errorf("a passenger create ended while the erase waited (err %v): it passed the erase", <-created)
		created <- nil
	}
	if _, err := hold.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-erased; err != nil {
		t.Errorf("erase: %v", err)
	}
	if err := <-created; err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the create after the erase: %v, want ErrNotFound", err)
	}
	var left int
	if err := db.NewRaw("SELECT count(*) FROM passengers WHERE passenger_name = 'Past The Erase'").Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d passengers of the erased account left", left)
	}
}

// waitForLockWaiters returns once n backends of db's database wait for a
// lock, or done has a result.
func waitForLockWaiters(t *testing.T, db *storagetest.DB, n int, done <-chan error) {
	t.Helper()
	for {
		var blocked int
		if err := db.NewRaw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").
			Scan(context.Background(), &blocked); err != nil {
			t.Fatal(err)
		}
		if blocked >= n || len(done) > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
