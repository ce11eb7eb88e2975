package clock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/clock"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// recorder records which holder ran each sweep.
type recorder struct {
	mu     sync.Mutex
	sweeps []clock.Sweep
}

func (r *recorder) swept(s clock.Sweep) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweeps = append(r.sweeps, s)
}

// by returns how many sweeps each holder ran.
func (r *recorder) by() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, s := range r.sweeps {
		out[s.Holder]++
	}
	return out
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start runs a loop for holder until the returned function is called
// (which waits for it to return).
func start(store clock.Store, holder string, ttl time.Duration, rec *recorder) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		clock.Run(ctx, clock.Options{Store: store, Holder: holder, Interval: 5 * time.Millisecond, TTL: ttl, Swept: rec.swept})
	}()
	return func() { cancel(); <-done }
}

// TestLeaseOneSweeperAndHandover: two loops with different holders over
// one database: only the lease's holder sweeps; when it stops (its
// context cancelled: it releases the lease) the other takes over; when a
// holder dies without releasing (a lease row left running), the other
// waits for the lease to expire, then takes over within the ttl.
func TestLeaseOneSweeperAndHandover(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	store := storage.NewStore(db.DB)
	rec := &recorder{}
	stopA := start(store, "a", time.Minute, rec)
	waitFor(t, "a's first sweeps", func() bool { return rec.by()["a"] >= 3 })
	stopB := start(store, "b", time.Minute, rec)
	defer stopB()
	// b's loop has asked for the lease several times meanwhile.
	waitFor(t, "more sweeps of a", func() bool { return rec.by()["a"] >= 30 })
	if n := rec.by()["b"]; n != 0 {
		t.Fatalf("b swept %d times while a held the lease", n)
	}
	stopA()
	waitFor(t, "b to take over after a's stop", func() bool { return rec.by()["b"] >= 3 })
	stopB()
	var left int
	if err := db.NewRaw(`SELECT count(*) FROM fleet_leases`).Scan(context.Background(), &left); err != nil || left != 0 {
		t.Fatalf("%d leases left after both stopped (%v): a graceful stop releases", left, err)
	}

	// A dead holder: its lease row stays, running for 2 s; a loop of c
	// does not sweep until the lease has expired, then takes it.
	ctx := context.Background()
	if _, err := db.NewRaw(`INSERT INTO fleet_leases (name, holder, lease_until) VALUES (?, 'dead', clock_timestamp() + interval '2 seconds')
		ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until`,
		storage.ClockLease).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var until time.Time
	if err := db.NewRaw(`SELECT lease_until FROM fleet_leases WHERE name = ?`, storage.ClockLease).Scan(ctx, &until); err != nil {
		t.Fatal(err)
	}
	rec2 := &recorder{}
	stopC := start(store, "c", time.Minute, rec2)
	defer stopC()
	waitFor(t, "c to take over the dead holder's lease", func() bool { return rec2.by()["c"] >= 1 })
	var swept []clock.Sweep
	rec2.mu.Lock()
	swept = append(swept, rec2.sweeps...)
	rec2.mu.Unlock()
	if first := swept[0].Now; first.Before(until) {
		t.Fatalf("c swept at %s, before the dead holder's lease ended at %s", first, until)
	}
	var holder string
	if err := db.NewRaw(`SELECT holder FROM fleet_leases WHERE name = ?`, storage.ClockLease).Scan(ctx, &holder); err != nil || holder != "c" {
		t.Fatalf("lease holder %q (%v), want c", holder, err)
	}
	if !swept[0].ServicesRun {
		t.Fatal("a holder taking over did not run the services sweep of the day")
	}
}
