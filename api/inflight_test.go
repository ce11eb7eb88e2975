package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
)

// holdAccount locks the account's row FOR UPDATE in a transaction of the
// test (as an erase would), so that every write on the account waits,
// holding its request's slot and its connection; the returned function
// ends the transaction, as the test's end does at the latest.
func holdAccount(t *testing.T, a *testAPI, id int64) func() {
	t.Helper()
	ctx := context.Background()
	tx, err := a.db.BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.NewRaw("SELECT id FROM accounts WHERE id = ? FOR UPDATE", id).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	end := func() { _ = tx.Rollback() }
	t.Cleanup(end) // before the servers' pools close, should the test stop early
	return end
}

// waitLocked returns once n backends named app (application_name) wait
// for a lock.
func waitLocked(t *testing.T, a *testAPI, app string, n int) {
	t.Helper()
	for {
		var waiting int
		if err := a.db.NewRaw(`SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock'`, app).
			Scan(context.Background(), &waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTenantInFlightBound (issue 34 item 1): a tenant has at most
// TenantMaxInFlight requests in the handlers of a server. With two of
// acme's writes held by a lock on acme's row (each holding its slot and
// a connection), acme's next request, and its subaccount's, wait
// TenantQueueTimeout and are refused 429 RATE_LIMITED of scope tenant
// with Retry-After; another customer of the same manager and the manager
// itself (a reseller is not charged with its customers' load) are
// answered, every request of theirs, none a 5xx. Once the writes end,
// acme is served again. On a server whose queue outlasts the hold, acme's
// request over the bound waits for a slot and is served.
func TestTenantInFlightBound(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
	srv, pool := poolServer(t, a, "inflight", 8, func(c *api.Config) {
		c.TenantMaxInFlight, c.TenantQueueTimeout, c.TenantStuckAfter = 2, 20*time.Millisecond, time.Hour
	})
	queued, queuedPool := poolServer(t, a, "inflight-queued", 8, func(c *api.Config) {
		c.TenantMaxInFlight, c.TenantQueueTimeout = 1, time.Minute
	})
	t.Cleanup(func() { closePairServers(t, a, []string{"inflight", "inflight-queued"}, pool, queuedPool) })
	acme, acmeID := demoToken(t, "acme-all"), a.accountID(t, "acme")
	release := holdAccount(t, a, acmeID)
	var held sync.WaitGroup
	for i := range 2 {
		held.Add(1)
		go func() {
			defer held.Done()
			r := srv.send(http.MethodPost, "/api/v2/objects", acme, fmt.Sprintf(`{"imei":"inflight-%d","account_id":%d}`, i, acmeID))
			if r.status != http.StatusCreated {
				t.Errorf("a held write: %d %s", r.status, r.raw)
			}
		}()
	}
	waitLocked(t, a, "inflight", 2)

	for _, tok := range []string{"acme-all", "acme-night-all"} {
		r := srv.get("/api/v2/me", demoToken(t, tok))
		denial(t, r, http.StatusTooManyRequests, api.CodeRateLimited, "")
		if d := r.body["error"].(map[string]any)["details"].(map[string]any); d["scope"] != "tenant" || d["limit"] != float64(2) {
			t.Errorf("%s: details %v, want scope tenant, limit 2", tok, d)
		}
		if r.header.Get("Retry-After") != "1" {
			t.Errorf("%s: Retry-After %q", tok, r.header.Get("Retry-After"))
		}
	}
	// The other tenants, each as many at once as its own bound, while
	// acme's slots are held.
	var others sync.WaitGroup
	var mu sync.Mutex
	answers := map[int]int{}
	for _, tok := range []string{"globex-read", "fleetco-all", "tailspin-all"} {
		for range 2 {
			others.Add(1)
			go func() {
				defer others.Done()
				for _, path := range []string{"/api/v2/me", "/api/v2/services", "/api/v2/objects"} {
					r := srv.get(path, demoToken(t, tok))
					mu.Lock()
					answers[r.status]++
					mu.Unlock()
				}
			}()
		}
	}
	others.Wait()
	if answers[http.StatusOK] != 3*2*3 {
		t.Errorf("the other tenants' answers while acme's slots were held: %v, want %d × 200", answers, 3*2*3)
	}

	release()
	held.Wait()
	if r := srv.get("/api/v2/me", acme); r.status != http.StatusOK {
		t.Errorf("acme once its writes ended: %d %s", r.status, r.raw)
	}

	// A request over the bound waits for a slot when the queue allows.
	releaseQueued := holdAccount(t, a, acmeID)
	heldQueued := make(chan response, 1)
	go func() {
		heldQueued <- queued.send(http.MethodPost, "/api/v2/objects", acme, fmt.Sprintf(`{"imei":"inflight-q","account_id":%d}`, acmeID))
	}()
	waitLocked(t, a, "inflight-queued", 1)
	waited := make(chan response, 1)
	go func() { waited <- queued.get("/api/v2/me", acme) }()

	releaseQueued()
	if r := <-heldQueued; r.status != http.StatusCreated {
		t.Errorf("the write held on the queued server: %d %s", r.status, r.raw)
	}
	if r := <-waited; r.status != http.StatusOK {
		t.Errorf("acme's request queued for a slot: %d %s", r.status, r.raw)
	}
}

// TestTenantInFlightStuckIsUnavailable: when the requests holding a
// tenant's slots have run for TenantStuckAfter (the database or a lock
// not answering, as in a fail-over), a request refused for want of a slot
// is 503 SERVICE_UNAVAILABLE with Retry-After, the server's trouble, not
// a 429 that blames the tenant's load (e2e TestFailover: the reads of a
// frozen primary were 429).
func TestTenantInFlightStuckIsUnavailable(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
	srv, pool := poolServer(t, a, "inflight-stuck", 8, func(c *api.Config) {
		c.TenantMaxInFlight, c.TenantQueueTimeout, c.TenantStuckAfter = 1, 20*time.Millisecond, 50*time.Millisecond
	})
	t.Cleanup(func() { closePairServers(t, a, []string{"inflight-stuck"}, pool) })
	acme, acmeID := demoToken(t, "acme-all"), a.accountID(t, "acme")
	release := holdAccount(t, a, acmeID)
	done := make(chan response, 1)
	go func() {
		done <- srv.send(http.MethodPost, "/api/v2/objects", acme, fmt.Sprintf(`{"imei":"inflight-stuck","account_id":%d}`, acmeID))
	}()
	waitLocked(t, a, "inflight-stuck", 1)
	time.Sleep(60 * time.Millisecond) // the holder has now run for longer than TenantStuckAfter
	r := srv.get("/api/v2/me", acme)
	denial(t, r, http.StatusServiceUnavailable, api.CodeUnavailable, "")
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	release()
	if r := <-done; r.status != http.StatusCreated {
		t.Errorf("the held write: %d %s", r.status, r.raw)
	}
}
