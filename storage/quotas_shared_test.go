package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// TestQuotaSharedCheckCrossesToExclusive: concurrent passenger creates of
// one account that start far from the limit (the shared check: creates
// do not wait for each other) and run into it (within max_connections +
// max_prepared_transactions of it: the exclusive check) create exactly up
// to the limit, and every other create is refused with a QuotaError that
// names the limit as used. Run for a limit just above the in-flight bound
// and one far above it, with more creators than the remaining room.
func TestQuotaSharedCheckCrossesToExclusive(t *testing.T) {
	ctx := context.Background()
	_, db := newStore(t)
	importJSON(t, db, demodata.File())
	var inFlight int64
	if err := db.DB.NewRaw(`SELECT current_setting('max_connections')::bigint + current_setting('max_prepared_transactions')::bigint`).Scan(ctx, &inFlight); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t)
	probe := storage.NewStore(db.DB)
	acme := principalOf(t, probe, "acme").Account
	scope := scopeOf(t, e, probe, "acme", "passengers")
	used := func() int64 {
		var n int64
		if err := db.DB.NewRaw(`SELECT count(*) FROM passengers WHERE account_id = ?`, acme.ID).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, room := range []int64{inFlight + 12, inFlight + 40} {
		t.Run(fmt.Sprintf("room_%d", room), func(t *testing.T) {
			limit := used() + room
			s := storage.NewStore(db.DB).WithQuotas(limits.Quotas{Passengers: &limit})
			creators := int(room) + 25
			const workers = 16
			var (
				wg               sync.WaitGroup
				mu               sync.Mutex
				created, refused int64
				next             = make(chan int)
			)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						_, _, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: fmt.Sprintf("room %d", i)}, nil)
						var qe *limits.QuotaError
						mu.Lock()
						switch {
						case err == nil:
							created++
						case errors.As(err, &qe) && qe.Limit == limit && qe.Used == limit:
							refused++
						default:
							t.Errorf("create %d: %v", i, err)
						}
						mu.Unlock()
					}
				}()
			}
			for i := range creators {
				next <- i
			}
			close(next)
			wg.Wait()
			if got := used(); got != limit || created != room || refused != int64(creators)-room {
				t.Fatalf("%d passengers (limit %d), %d created, %d refused of %d creates", got, limit, created, refused, creators)
			}
		})
	}
}
