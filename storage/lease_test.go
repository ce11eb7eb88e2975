package storage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// TestTryLease: a free lease is taken; while it runs only its holder
// renews it; an expired one is taken by another; a released one at once;
// of many asking at once exactly one holds it.
func TestTryLease(t *testing.T) {
	t.Parallel()
	_, db := newStore(t)
	ctx := context.Background()
	try := func(holder string, want bool) {
		t.Helper()
		held, err := storage.TryLease(ctx, db.DB, "job", holder, time.Hour)
		if err != nil || held != want {
			t.Fatalf("TryLease(%s) = %v, %v; want %v", holder, held, err, want)
		}
	}
	try("a", true)
	try("b", false)
	try("a", true) // renewed
	try("b", false)
	if _, err := db.NewRaw(`UPDATE fleet_leases SET lease_until = clock_timestamp() - interval '1 second' WHERE name = 'job'`).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	try("b", true) // a's lease expired
	try("a", false)
	if err := storage.ReleaseLease(ctx, db.DB, "job", "a"); err != nil { // not a's: nothing
		t.Fatal(err)
	}
	try("a", false)
	if err := storage.ReleaseLease(ctx, db.DB, "job", "b"); err != nil {
		t.Fatal(err)
	}
	try("a", true)
	if _, err := storage.TryLease(ctx, db.DB, "job", "", time.Hour); err == nil {
		t.Fatal("a lease without a holder was asked for")
	}

	// Ten holders at once on a new lease: exactly one holds it.
	var mu sync.Mutex
	winners := 0
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			held, err := storage.TryLease(ctx, db.DB, "race", string(rune('a'+i)), time.Hour)
			if err != nil {
				t.Error(err)
			}
			if held {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if winners != 1 {
		t.Fatalf("%d holders of one lease", winners)
	}
}
