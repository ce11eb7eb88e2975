package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestReadingsDatabaseFrozenMidBatch: PostgreSQL stops answering in the
// middle of a batch (the server reaches it through a proxy that goes
// silent once the batch waits at its positions insert, as SIGSTOP of
// PostgreSQL or a partition leaves a connection: open, and mute). The
// batch is answered 503 SERVICE_UNAVAILABLE with Retry-After within the
// server's request timeout, while the database is still frozen (the
// answer comes before the test lets anything go); nothing of the batch is
// stored; and once the database answers again the server takes the same
// batch whole without a restart (a dead pooled connection may cost one
// 503 more).
func TestReadingsDatabaseFrozenMidBatch(t *testing.T) {
	base := newTestAPI(t)
	ctx := context.Background()
	tok := demoToken(t, "acme-all")
	proxy := storagetest.NewProxy(t, base.db.URL)
	pdb := storage.Open(proxy.URL, storage.Options{MaxOpenConns: 4})
	t.Cleanup(func() { pdb.Close() })
	store := storage.NewStore(pdb)
	engine, err := policy.New(ctx, policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{
		Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store, Ready: store,
		RateLimit: 1 << 30, AuthFailureLimit: 1 << 30, RequestTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &testAPI{t: t, handler: srv.Handler(), store: store, db: base.db, srv: srv}

	body, done, release := postBlockedAtInsert(t, a, tok)
	// The batch waits at its insert (its devices locked): freeze.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := a.db.NewRaw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO positions%'`).Scan(ctx, &waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch never waited at its positions insert")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := proxy.StallAll(); n == 0 {
		t.Fatal("no connection to freeze")
	}
	// The answer comes while the database is frozen and the lock held: the
	// server's timeout bounds the wait, not the database.
	var r loadResult
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the frozen batch was not answered while the database stayed frozen")
	}
	if r.status != http.StatusServiceUnavailable || r.code != api.CodeUnavailable || r.retryAfter == "" {
		t.Fatalf("frozen mid-batch: %d %s (Retry-After %q), want 503 SERVICE_UNAVAILABLE with Retry-After", r.status, r.raw, r.retryAfter)
	}
	// Thaw: the lock goes; the batch's backend, its client gone, rolls
	// back.
	release()
	deadline = time.Now().Add(30 * time.Second)
	for {
		var open int
		if err := a.db.NewRaw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND pid <> pg_backend_pid() AND query LIKE 'INSERT INTO positions%' AND state <> 'idle'`).Scan(ctx, &open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the frozen batch's transaction is still open 30 s after the thaw")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := a.count(t, "SELECT count(*) FROM positions"); n != 0 {
		t.Fatalf("%d positions of the frozen batch", n)
	}
	if n := a.count(t, "SELECT count(*) FROM objects WHERE last_time IS NOT NULL OR odometer = 130000"); n != 0 {
		t.Fatalf("the frozen batch moved %d devices", n)
	}
	// The server recovers: the same batch is stored whole (each pooled
	// connection frozen with the database may cost one 503 first).
	var res loadResult
	for range 10 {
		if res = sendRaw(a.handler, http.MethodPost, "/api/v2/readings", tok, body); res.status != http.StatusServiceUnavailable {
			break
		}
	}
	if res.status != http.StatusOK {
		t.Fatalf("after the thaw: %d %s", res.status, res.raw)
	}
	if n := a.count(t, "SELECT count(*) FROM positions"); n != 2 {
		t.Fatalf("after the thaw: %d positions, want the batch's 2", n)
	}
}
