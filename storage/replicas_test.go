package storage_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestMain stops the private primary and standby of the replica tests.
func TestMain(m *testing.M) { os.Exit(storagetest.Main(m)) }

// replicated is the demo data on a private primary and its standby, a
// replica set over the standby and the stores of both.
type replicated struct {
	*storagetest.Replicated
	reps    *storage.Replicas
	routed  *storage.Store // reads of the client API through reps
	primary *storage.Store // everything on the primary
	reader  *sdkmetric.ManualReader
	engine  *policy.Engine
}

func newReplicated(t *testing.T, maxLag time.Duration) *replicated {
	t.Helper()
	r := storagetest.NewReplicated(t)
	importJSON(t, r.DB, demodata.File())
	r.CatchUp(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reps, err := storage.NewReplicas(r.DB.DB, []*bun.DB{r.Standby}, storage.ReplicaOptions{MaxLag: maxLag, Interval: 20 * time.Millisecond, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	primary := storage.NewStore(r.DB.DB)
	return &replicated{Replicated: r, reps: reps, routed: primary.WithReplicas(reps), primary: primary, reader: reader, engine: newEngine(t)}
}

// newUsableReplicated is newReplicated with an hour's lag allowed, after
// a check that found the caught-up standby usable.
func newUsableReplicated(t *testing.T) *replicated {
	t.Helper()
	r := newReplicated(t, time.Hour)
	r.reps.Check(context.Background())
	if !r.reps.Usable(0) {
		t.Fatal("the caught-up standby is not usable")
	}
	return r
}

// reads returns fleet.db.reads by target, and fleet.db.read_retries.
func (r *replicated) reads(t *testing.T) (primary, replica, retries int64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, p := range sum.DataPoints {
				target, _ := p.Attributes.Value(attribute.Key("target"))
				switch {
				case m.Name == "fleet.db.read_retries":
					retries += p.Value
				case target.AsString() == storage.TargetPrimary:
					primary += p.Value
				case target.AsString() == storage.TargetReplica:
					replica += p.Value
				}
			}
		}
	}
	return primary, replica, retries
}

// scope is username's row scope of resource.
func (r *replicated) scope(t *testing.T, username string, resource policy.Resource) policy.Scope {
	t.Helper()
	return scopeOf(t, r.engine, r.primary, username, resource)
}

// passengerNames lists the passengers that username sees through s.
func (r *replicated) passengerNames(t *testing.T, s *storage.Store, username string) map[string]bool {
	t.Helper()
	page, err := storage.List(context.Background(), s, r.scope(t, username, storage.Passengers.Resource()), storage.Passengers,
		storage.ListRequest{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatalf("list passengers: %v", err)
	}
	out := map[string]bool{}
	for _, p := range page.Items {
		out[p.PassengerName] = true
	}
	return out
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReplicaRouting proves where each kind of entry point reads, with the
// standby's replay paused so that what the primary writes is not on the
// replica: the three read entry points of the client API (List of a
// tenant resource, EventByID, DueServices) do not see a row written on the
// primary and count as replica reads; the write paths see their own
// writes, idempotency look-ups and authentication find what only the
// primary has, and the lists under the management scope see a new token.
func TestReplicaRouting(t *testing.T) {
	ctx := context.Background()
	r := newUsableReplicated(t)
	acme := principalOf(t, r.primary, "acme")
	r.PauseReplay(t)

	// A write path: its answer is its own write (on the primary).
	idem := &storage.IdempotentRequest{AccountID: acme.Account.ID, Key: "replica-routing", RequestHash: []byte("h")}
	created, replayed, err := r.routed.CreatePassenger(ctx, r.scope(t, "acme", storage.Passengers.Resource()), acme.Account.ID,
		storage.Passenger{PassengerName: "Written while replay is paused", PassengerAssignID: "RR-1"}, idem)
	if err != nil || replayed || created.PassengerID == 0 {
		t.Fatalf("create: %+v %v %v", created, replayed, err)
	}
	// The idempotency look-up finds the key that only the primary has.
	again, replayed, err := r.routed.CreatePassenger(ctx, r.scope(t, "acme", storage.Passengers.Resource()), acme.Account.ID,
		storage.Passenger{PassengerName: "Written while replay is paused", PassengerAssignID: "RR-1"}, idem)
	if err != nil || !replayed || again.PassengerID != created.PassengerID {
		t.Fatalf("replay of the key: %+v replayed %v %v", again, replayed, err)
	}
	// Authentication finds a token that only the primary has.
	secret, _, err := r.routed.CreateToken(ctx, storage.NewToken{Username: "acme", Name: "replica-routing", Permissions: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, err := r.routed.PrincipalByTokenHash(ctx, hash); err != nil || !found {
		t.Fatalf("authentication of a new token: found %v, %v", found, err)
	}
	// A list under the management scope sees the new token.
	acmeIn := policy.NewInput(acme, "GET", "/tokens", demoToday)
	mscope, err := r.engine.ManagementScope(ctx, acmeIn)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := storage.List(ctx, r.routed, mscope, storage.Tokens, storage.ListRequest{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, tok := range tokens.Items {
		seen = seen || tok.Name == "replica-routing"
	}
	if !seen {
		t.Error("GET /tokens (management) does not see the token just created: it did not read the primary")
	}
	// An event and a due service written on the primary.
	var eventID int64
	if err := r.DB.NewRaw(`INSERT INTO events (account_id, name, type) VALUES (?, 'Written while paused', 'overspeed') RETURNING event_id`,
		acme.Account.ID).Scan(ctx, &eventID); err != nil {
		t.Fatal(err)
	}
	p0, r0, _ := r.reads(t)

	// The read entry points of the client API read the replica.
	if r.passengerNames(t, r.routed, "acme")["Written while replay is paused"] {
		t.Error("List (passengers) through the replica set sees a row the paused standby does not have")
	}
	if !r.passengerNames(t, r.primary, "acme")["Written while replay is paused"] {
		t.Error("List on the primary does not see the new row")
	}
	evScope := r.scope(t, "acme", storage.Events.Resource())
	if _, err := r.routed.EventByID(ctx, evScope, eventID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("EventByID through the replica set: %v, want ErrNotFound (the standby lacks the event)", err)
	}
	if _, err := r.primary.EventByID(ctx, evScope, eventID); err != nil {
		t.Errorf("EventByID on the primary: %v", err)
	}
	if _, err := r.routed.DueServices(ctx, r.scope(t, "acme", storage.Services.Resource()), demoToday, 10); err != nil {
		t.Errorf("DueServices: %v", err)
	}
	p1, r1, _ := r.reads(t)
	if p1 != p0 || r1-r0 != 3 {
		t.Errorf("reads: primary +%d, replica +%d; want +0, +3 (List, EventByID, DueServices)", p1-p0, r1-r0)
	}

	r.ResumeReplay(t)
	r.CatchUp(t)
	if !r.passengerNames(t, r.routed, "acme")["Written while replay is paused"] {
		t.Error("after replay resumed, the replica does not show the row")
	}
	if _, err := r.routed.EventByID(ctx, evScope, eventID); err != nil {
		t.Errorf("EventByID after replay resumed: %v", err)
	}
}

// TestReplicaLagFallback: with replay paused and the primary written to,
// the replica's lag passes FLEET_REPLICA_MAX_LAG and reads fall back to
// the primary (they see the new row); when replay resumes the replica is
// used again. Before that, an idle primary does not make a caught-up
// replica look lagging, however long nothing is written.
func TestReplicaLagFallback(t *testing.T) {
	const maxLag = 200 * time.Millisecond
	r := newReplicated(t, maxLag)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.reps.Run(ctx) }()
	defer wg.Wait()
	defer cancel()
	waitFor(t, "the standby usable", func() bool { return r.reps.Usable(0) })

	// Idle: five times the maximum lag without a write.
	until := time.Now().Add(5 * maxLag)
	for time.Now().Before(until) {
		if !r.reps.Usable(0) {
			lag, _ := r.reps.Lag(0)
			t.Fatalf("an idle primary made the caught-up replica lag %s", lag)
		}
		time.Sleep(10 * time.Millisecond)
	}

	r.PauseReplay(t)
	if _, err := r.DB.ExecContext(context.Background(), `INSERT INTO passengers (account_id, passenger_name, passenger_assign_id)
		SELECT id, 'Behind the paused replay', 'LAG-1' FROM accounts WHERE username = 'acme'`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the paused standby skipped for its lag", func() bool { return !r.reps.Usable(0) })
	if lag, ok := r.reps.Lag(0); !ok || lag <= maxLag {
		t.Errorf("lag %s (known %v), want > %s", lag, ok, maxLag)
	}
	p0, r0, _ := r.reads(t)
	if !r.passengerNames(t, r.routed, "acme")["Behind the paused replay"] {
		t.Error("with the replica skipped, the list did not read the primary")
	}
	p1, r1, _ := r.reads(t)
	if p1-p0 != 1 || r1 != r0 {
		t.Errorf("reads while lagging: primary +%d, replica +%d; want +1, +0", p1-p0, r1-r0)
	}

	r.ResumeReplay(t)
	waitFor(t, "the standby usable again after replay resumed", func() bool { return r.reps.Usable(0) })
	if !r.passengerNames(t, r.routed, "acme")["Behind the paused replay"] {
		t.Error("the caught-up replica lacks the row")
	}
	p2, r2, _ := r.reads(t)
	if p2 != p1 || r2-r1 != 1 {
		t.Errorf("reads after recovery: primary +%d, replica +%d; want +0, +1", p2-p1, r2-r1)
	}
}

// TestReplicaFailure: a standby stopped (pg_ctl stop -m immediate) while
// it is marked usable fails the next read on it; that read is run again
// on the primary (no error to the caller, one retry counted) and the
// replica is skipped; reads under concurrent load across the stop all
// succeed; after a restart the checker makes it usable again.
func TestReplicaFailure(t *testing.T) {
	r := newUsableReplicated(t)
	ctx := context.Background()
	scope := r.scope(t, "fleetco", storage.Services.Resource())
	list := func() error {
		_, err := storage.List(ctx, r.routed, scope, storage.Services, storage.ListRequest{Page: 1, PerPage: 20})
		return err
	}
	if err := list(); err != nil { // a pooled connection to the standby
		t.Fatal(err)
	}

	// Concurrent reads across the stop.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := list(); err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	r.StopStandby(t)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, err := range failures {
		t.Errorf("a read failed across the standby's stop: %v", err)
	}
	if r.reps.Usable(0) {
		t.Error("the stopped standby is still usable")
	}
	_, _, retries := r.reads(t)
	if retries < 1 {
		t.Errorf("no read retried on the primary (%d); the stop broke no read in flight", retries)
	}

	// The checker keeps it skipped while it is down.
	r.reps.Check(ctx)
	if r.reps.Usable(0) {
		t.Error("a check made the stopped standby usable")
	}
	if err := list(); err != nil {
		t.Errorf("read with the standby down: %v", err)
	}

	r.StartStandby(t)
	r.reps.Check(ctx)
	if !r.reps.Usable(0) {
		t.Fatal("the restarted standby is not usable after a check")
	}
	_, r0, _ := r.reads(t)
	if err := list(); err != nil {
		t.Fatal(err)
	}
	if _, r1, _ := r.reads(t); r1-r0 != 1 {
		t.Errorf("after the restart, replica reads +%d, want +1", r1-r0)
	}
}

// TestReplicaNotAStandby: a read URL that names a server that is not in
// recovery (here the primary itself) is never read from.
func TestReplicaNotAStandby(t *testing.T) {
	r := storagetest.NewReplicated(t)
	reps, err := storage.NewReplicas(r.DB.DB, []*bun.DB{r.DB.DB}, storage.ReplicaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reps.Check(context.Background())
	if reps.Usable(0) {
		t.Error("a primary given as a read replica is usable")
	}
}

// TestReplicaHangs: a standby that hangs (its processes frozen with
// SIGSTOP: connections stay open, nothing answers) costs a read with a
// deadline half of its time, not the request: the replica's attempt gets
// half of the time left, then the read runs on the primary.
func TestReplicaHangs(t *testing.T) {
	r := newReplicated(t, time.Hour)
	ctx := context.Background()
	r.reps.Check(ctx)
	scope := r.scope(t, "fleetco", storage.Services.Resource())
	list := func(ctx context.Context) error {
		_, err := storage.List(ctx, r.routed, scope, storage.Services, storage.ListRequest{Page: 1, PerPage: 20})
		return err
	}
	if err := list(ctx); err != nil {
		t.Fatal(err)
	}
	r.FreezeStandby(t)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := list(rctx); err != nil {
		t.Errorf("a read with the standby frozen: %v", err)
	}
	if _, _, retries := r.reads(t); retries != 1 {
		t.Errorf("retries on the primary: %d, want 1", retries)
	}
	if r.reps.Usable(0) {
		t.Error("the frozen standby is still usable")
	}
	r.ThawStandby(t)
}

// TestManagementReadsWithStandbyPaused is the behavioural half of
// TestReadRouting for the management reads (issue 25 item 2): with the
// standby's replay paused, an account changed and a token revoked on the
// primary are read back changed through a Store that has the replica set,
// and no read is counted on the replica. The standby itself still holds
// the old values (checked), so a ManagedAccount or ManagedTokenByID routed
// to it would answer them and fail here.
func TestManagementReadsWithStandbyPaused(t *testing.T) {
	ctx := context.Background()
	r := newReplicated(t, time.Hour)
	acme := principalOf(t, r.primary, "acme")
	_, tok, err := r.primary.CreateToken(ctx, storage.NewToken{Username: "acme", Name: "paused-revoke", Permissions: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	r.CatchUp(t)
	r.reps.Check(ctx)
	if !r.reps.Usable(0) {
		t.Fatal("the caught-up standby is not usable")
	}
	mscope, err := r.engine.ManagementScope(ctx, policy.NewInput(acme, "GET", "/accounts", demoToday))
	if err != nil {
		t.Fatal(err)
	}
	r.PauseReplay(t)
	const email = "changed-while-paused@example.com"
	if _, err := r.DB.NewRaw("UPDATE accounts SET email = ? WHERE id = ?", email, acme.Account.ID).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.primary.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	// The standby is stale: what a replica read would answer.
	var standbyEmail string
	var standbyRevoked bool
	if err := r.Standby.NewRaw("SELECT email FROM accounts WHERE id = ?", acme.Account.ID).Scan(ctx, &standbyEmail); err != nil {
		t.Fatal(err)
	}
	if err := r.Standby.NewRaw("SELECT revoked_at IS NOT NULL FROM tokens WHERE id = ?", tok.ID).Scan(ctx, &standbyRevoked); err != nil {
		t.Fatal(err)
	}
	if standbyEmail == email || standbyRevoked {
		t.Fatalf("the paused standby already has the change (email %q, revoked %v): the test proves nothing", standbyEmail, standbyRevoked)
	}
	p0, r0, _ := r.reads(t)
	for range 4 { // more than one turn of the replica chooser
		a, _, _, err := r.routed.ManagedAccount(ctx, mscope, acme.Account.ID)
		if err != nil {
			t.Fatalf("ManagedAccount: %v", err)
		}
		if a.Email != email {
			t.Errorf("ManagedAccount answers email %q, want %q: it read the paused standby", a.Email, email)
		}
		mt, err := r.routed.ManagedTokenByID(ctx, mscope, tok.ID)
		if err != nil {
			t.Fatalf("ManagedTokenByID: %v", err)
		}
		if mt.RevokedAt == nil {
			t.Error("ManagedTokenByID answers the revoked token unrevoked: it read the paused standby")
		}
		ids, err := r.routed.ManagedAccounts(ctx, mscope, acme.Account.ID)
		if err != nil || len(ids) != 1 {
			t.Errorf("ManagedAccounts: %v, %v", ids, err)
		}
	}
	if p1, r1, _ := r.reads(t); r1 != r0 || p1 != p0 {
		t.Errorf("management reads counted as routed reads: primary +%d, replica +%d; want +0, +0 (they never go through the chooser)", p1-p0, r1-r0)
	}
	r.ResumeReplay(t)
}

// TestKeptTotalsPerServer: a search's total counted on the primary and on
// the replica is kept for each (a version holds its server's start), so
// that reads alternating between them count it once on each instead of
// replacing each other's total on every read.
func TestKeptTotalsPerServer(t *testing.T) {
	ctx := context.Background()
	r := newUsableReplicated(t)
	admin := r.scope(t, "admin", storage.Services.Resource())
	req := storage.ListRequest{Page: 1, PerPage: 2, Search: "a"}
	counted, reused := storage.KeptTotals(r.primary)
	var totals []int64
	for range 3 {
		for _, s := range []*storage.Store{r.primary, r.routed} {
			page, err := storage.List(ctx, s, admin, storage.Services, req)
			if err != nil {
				t.Fatal(err)
			}
			totals = append(totals, page.Total)
		}
	}
	if _, replica, _ := r.reads(t); replica != 3 {
		t.Fatalf("%d reads on the replica, want 3", replica)
	}
	c, u := storage.KeptTotals(r.primary)
	if c-counted != 2 || u-reused < 4 {
		t.Errorf("alternating servers: %d totals counted, %d reused; want 2 (one a server) and the other 4 reads reused", c-counted, u-reused)
	}
	if slices.Min(totals) != slices.Max(totals) || totals[0] < 2 {
		t.Errorf("totals %v: want one total of several rows", totals)
	}
}
