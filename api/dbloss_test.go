package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

type syncLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// loadResult is one answered request of the load in TestBackendsTerminated.
type loadResult struct {
	method, path string
	status       int
	code         string
	retryAfter   string
	key          string // Idempotency-Key of a create
	raw          string
}

// sendRaw runs one request through the router from any goroutine (no
// t.Fatal) and returns what the client saw.
func sendRaw(h http.Handler, method, path, token, body string, headers ...string) loadResult {
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &env)
	return loadResult{method: method, path: path, status: rec.Code, code: env.Error.Code,
		retryAfter: rec.Header().Get("Retry-After"), raw: rec.Body.String()}
}

// TestBackendsTerminated kills every backend of the test's database again
// and again (pg_terminate_backend, as an administrator or a failover does)
// while clients read every kind of route and create passengers with
// Idempotency-Keys. Losing the connection mid-request is 503
// SERVICE_UNAVAILABLE with Retry-After, never 500; every create answered
// 201 is stored exactly once; and retrying every create with its key
// leaves exactly one passenger per key.
func TestBackendsTerminated(t *testing.T) {
	base := newTestAPI(t)
	ctx := context.Background()
	tok := demoToken(t, "acme-all")
	var eventID int64
	if err := base.db.NewRaw(`SELECT min(event_id) FROM events e JOIN accounts a ON a.id = e.account_id WHERE a.username = 'acme'`).
		Scan(ctx, &eventID); err != nil {
		t.Fatal(err)
	}
	// The server reaches the database through a proxy that can drop its
	// connections without a word from PostgreSQL.
	proxy := storagetest.NewProxy(t, base.db.URL)
	pdb := storage.Open(proxy.URL, storage.Options{MaxOpenConns: 8})
	t.Cleanup(func() { pdb.Close() })
	store := storage.NewStore(pdb)
	engine, err := policy.New(ctx, policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncLog
	srv, err := api.New(api.Config{
		Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store, Ready: store,
		RateLimit: 1 << 30, AuthFailureLimit: 1 << 30, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &testAPI{t: t, handler: srv.Handler(), store: store, db: base.db, srv: srv}
	reads := []string{
		"/api/v2/services?per_page=20&sort=name",
		"/api/v2/reports?search=da",
		"/api/v2/events?page=1",
		fmt.Sprintf("/api/v2/events/%d", eventID),
		"/api/v2/me",
		"/api/v2/services/due",
	}

	// The killer has a connection of its own (excluded by pg_backend_pid).
	killer := storage.Open(a.db.URL, storage.Options{MaxOpenConns: 1})
	t.Cleanup(func() { killer.Close() })
	// Each round kills every connection one way: the server terminates the
	// backends (FATAL 57P01), or the network closes (EOF) or resets them.
	kills := []func() int64{
		func() int64 {
			var n int64
			err := killer.NewRaw(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()) AS k`).Scan(ctx, &n)
			if err != nil {
				return 0
			}
			return n
		},
		func() int64 { return int64(proxy.CutAll(storagetest.CutClose)) },
		func() int64 { return int64(proxy.CutAll(storagetest.CutReset)) },
	}
	// The killer strikes after every killEvery answered requests, so that
	// the mix of killed and served requests does not depend on the
	// machine's speed.
	const killEvery = 12
	var (
		killed   atomic.Int64
		answered atomic.Int64
		stop     = make(chan struct{})
		killDone = make(chan struct{})
	)
	go func() {
		defer close(killDone)
		for round := 0; ; round++ {
			for answered.Load() < int64(round+1)*killEvery {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
			killed.Add(kills[round%len(kills)]())
		}
	}()

	const clients, perClient = 8, 60
	results := make([][]loadResult, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				var r loadResult
				if i%4 == 3 {
					key := fmt.Sprintf("dbloss-%d-%d", c, i)
					r = sendRaw(a.handler, http.MethodPost, "/api/v2/passengers", tok,
						`{"passenger_name":"`+key+`"}`, "Idempotency-Key", key)
					r.key = key
				} else {
					r = sendRaw(a.handler, http.MethodGet, reads[(c+i)%len(reads)], tok, "")
				}
				results[c] = append(results[c], r)
				answered.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-killDone

	var ok, unavailable int
	var creates []loadResult
	for _, rs := range results {
		for _, r := range rs {
			if r.key != "" {
				creates = append(creates, r)
			}
			switch {
			case r.status == http.StatusOK || r.status == http.StatusCreated:
				ok++
			case r.status == http.StatusServiceUnavailable && r.code == api.CodeUnavailable && r.retryAfter != "":
				unavailable++
			default:
				t.Errorf("%s %s: %d %q Retry-After %q: %s", r.method, r.path, r.status, r.code, r.retryAfter, r.raw)
			}
		}
	}
	if strings.Contains(logs.String(), `"code":"INTERNAL_ERROR"`) {
		t.Errorf("INTERNAL_ERROR in the log")
	}
	t.Logf("%d succeeded, %d 503, %d connections killed", ok, unavailable, killed.Load())
	if killed.Load() == 0 || ok == 0 {
		t.Fatalf("the load proves nothing: %d connections killed, %d requests succeeded", killed.Load(), ok)
	}

	// Every acknowledged create is stored exactly once (checked on a
	// handle of its own: the test's pool lost its connections too).
	check := storage.Open(a.db.URL, storage.Options{MaxOpenConns: 1})
	t.Cleanup(func() { check.Close() })
	rows := func(key string) int {
		var n int
		if err := check.NewRaw(`SELECT count(*) FROM passengers WHERE passenger_name = ?`, key).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, r := range creates {
		n := rows(r.key)
		if r.status == http.StatusCreated && n != 1 {
			t.Errorf("create %s answered 201 but %d rows are stored", r.key, n)
		}
		if n > 1 {
			t.Errorf("create %s: %d rows", r.key, n)
		}
	}
	// A retry with the same key (the database is back) returns the first
	// passenger or creates it now: one row per key in every case.
	for _, r := range creates {
		var res response
		// A pooled connection that died idle answers one 503 more.
		for range 10 {
			if res = a.post(`{"passenger_name":"`+r.key+`"}`, tok, "Idempotency-Key", r.key); res.status != http.StatusServiceUnavailable {
				break
			}
		}
		if res.status != http.StatusCreated {
			t.Errorf("retry of %s: %d %s", r.key, res.status, res.raw)
		}
		if r.status == http.StatusCreated && res.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry of %s, first answered 201, was not a replay", r.key)
		}
		if n := rows(r.key); n != 1 {
			t.Errorf("after the retry of %s: %d rows", r.key, n)
		}
	}
}

// TestClientGoneIsNotAFailure sends requests whose client has gone away
// (the request context is cancelled) on every kind of route: the database
// work fails with context.Canceled, which is not a 500 and is not logged
// as a failure of the service.
func TestClientGoneIsNotAFailure(t *testing.T) {
	var logs syncLog
	a := newTestAPIWith(t, func(c *api.Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	tok := demoToken(t, "acme-all")
	for _, path := range []string{"/api/v2/services", "/api/v2/me", "/api/v2/services/due", "/api/v2/events/1"} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		a.handler.ServeHTTP(rec, req)
		if rec.Code == http.StatusInternalServerError {
			t.Errorf("%s: 500: %s", path, rec.Body)
		}
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("a client going away was logged as an error:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "request abandoned by the client") {
		t.Fatalf("no request reached the database:\n%s", logs.String())
	}
}
