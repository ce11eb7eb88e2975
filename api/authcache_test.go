package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/authsync"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// cachedReplica is one API server over the real router with its own database
// pool, policy engine, authentication cache and invalidation listener, as
// one `fleetapi serve` process would have, sharing the database with the
// other replicas of a test.
type cachedReplica struct {
	t        *testing.T
	name     string
	http     *httptest.Server
	cache    *tenancy.PrincipalCache
	listener *authsync.Listener
	// states receives each change of the listener's state; when hold is
	// not nil, a disconnect waits on it before reconnecting.
	states chan bool
	hold   chan struct{}
	// offset moves the replica's clock (authentication and policy).
	offset atomic.Int64
}

type replicaOptions struct {
	cacheSize int
	maxAge    time.Duration
	// hold makes the listener wait after a disconnect until it is closed.
	hold chan struct{}
	// listenURL, when set, is the listener's database (a proxy in front
	// of it); db.DirectURL otherwise.
	listenURL string
	// onNotification is the listener's hook (ListenerOptions).
	onNotification func(payload string)
	// realTiming keeps the listener's trust and lease at their defaults;
	// otherwise they are long, so that a loaded machine does not make the
	// cache's trust run out in the middle of a case. trust and lease, when
	// set, are the listener's own.
	realTiming   bool
	trust, lease time.Duration
	// dial, when not nil, dials the listener's LISTEN session
	// (ListenerOptions.Dial).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// configure, when not nil, adjusts the server's configuration
	// (the notification streams' settings) before it is built.
	configure func(*api.Config)
}

var replicaSeq atomic.Int64

// newCachedReplica starts a replica on db and waits until its cache is trusted.
func newCachedReplica(t *testing.T, db *storagetest.DB, opts replicaOptions) *cachedReplica {
	t.Helper()
	ctx := context.Background()
	r := &cachedReplica{t: t, name: fmt.Sprintf("fleetapi auth listener test %d", replicaSeq.Add(1)), states: make(chan bool, 16), hold: opts.hold}
	pool := storage.Open(db.URL, storage.Options{MaxOpenConns: 4})
	t.Cleanup(func() { pool.Close() })
	store := storage.NewStore(pool)
	engine, err := policy.New(ctx, policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	r.cache = tenancy.NewPrincipalCache(opts.cacheSize, opts.maxAge)
	lctx, cancel := context.WithCancel(ctx)
	// LISTEN needs a session of its own: directly on PostgreSQL, never
	// through the test's transaction pooler (as FLEET_DATABASE_LISTEN_URL
	// in production).
	listenURL := db.DirectURL
	if opts.listenURL != "" {
		listenURL = opts.listenURL
	}
	trust, lease := time.Minute, time.Minute+time.Second
	if opts.realTiming {
		trust, lease = 0, 0
	}
	if opts.trust > 0 {
		trust, lease = opts.trust, opts.lease
	}
	r.listener = authsync.NewListener(listenURL, r.cache, authsync.ListenerOptions{
		ApplicationName: r.name,
		OnNotification:  opts.onNotification,
		Dial:            opts.dial,
		Trust:           trust,
		Lease:           lease,
		MinBackoff:      10 * time.Millisecond,
		// The tests do not test the ping: a loaded machine must not make it
		// time out and distrust the cache in the middle of a case.
		PingTimeout: 15 * time.Second,
		Logger:      slog.New(slog.NewTextHandler(testLog{t}, nil)),
		OnState: func(connected bool) {
			r.states <- connected
			if !connected && r.hold != nil {
				select {
				case <-r.hold:
				case <-lctx.Done(): // the test ended first
				}
			}
		},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.listener.Run(lctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		r.listener.Close()
	})
	now := func() time.Time { return time.Now().Add(time.Duration(r.offset.Load())) }
	cfg := api.Config{
		Auth:             &tenancy.Authenticator{Store: store, Cache: r.cache, Now: now},
		AuthSync:         r.listener.Sync,
		Policy:           engine,
		Store:            store,
		Ready:            store,
		Now:              now,
		AuthFailureLimit: 10000,
	}
	if opts.configure != nil {
		opts.configure(&cfg)
	}
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.http = httptest.NewServer(srv.Handler())
	t.Cleanup(r.http.Close)
	r.waitState(true)
	return r
}

// waitState waits for the listener to report the state want.
func (r *cachedReplica) waitState(want bool) {
	r.t.Helper()
	select {
	case got := <-r.states:
		if got != want {
			r.t.Fatalf("%s: listener state %v, want %v", r.name, got, want)
		}
	case <-time.After(60 * time.Second):
		r.t.Fatalf("%s: listener never reported state %v", r.name, want)
	}
}

// sync is the barrier of the tests: it returns once every change
// committed before it has been applied to the replica's cache.
func (r *cachedReplica) sync() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.listener.Sync(ctx); err != nil {
		r.t.Fatalf("%s: sync: %v", r.name, err)
	}
}

// testLog writes the listener's log lines to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

type answer struct {
	status int
	code   string
	header http.Header
	body   map[string]any
}

// do sends a request over HTTP to the replica.
func (r *cachedReplica) do(method, path, secret string, body any) answer {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.http.URL+api.BasePath+path, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	res, err := r.http.Client().Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, header: res.Header}
	raw, _ := io.ReadAll(res.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			r.t.Fatalf("%s %s: %v: %q", method, path, err, raw)
		}
		if e, ok := a.body["error"].(map[string]any); ok {
			a.code, _ = e["code"].(string)
		}
	}
	return a
}

func (r *cachedReplica) get(path, secret string) answer {
	r.t.Helper()
	return r.do(http.MethodGet, path, secret, nil)
}

// cachedSoon authenticates secret on the replica until its principal is
// served from the cache, for up to a minute: on a replica with the real
// timing (replicaOptions.realTiming) the cache's trust may lapse for a
// moment on a loaded machine.
func (r *cachedReplica) cachedSoon(secret string) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		before := r.cache.Stats().Hits
		if a := r.get("/me", secret); a.status != http.StatusOK && a.status != http.StatusUnauthorized && a.status != http.StatusForbidden {
			r.t.Fatalf("%s: GET /me: %d", r.name, a.status)
		}
		if r.cache.Stats().Hits > before && r.cache.Contains(hashOf(r.t, secret)) {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: the token's principal is never served from the cache (%+v)", r.name, r.cache.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cacheByUse authenticates secret on the replica until its principal is
// served from the cache, and fails when it is not.
func (r *cachedReplica) cacheByUse(secret string) {
	r.t.Helper()
	r.get("/me", secret)
	before := r.cache.Stats().Hits
	if a := r.get("/me", secret); a.status != http.StatusOK && a.status != http.StatusUnauthorized && a.status != http.StatusForbidden {
		r.t.Fatalf("%s: GET /me: %d", r.name, a.status)
	}
	if r.cache.Stats().Hits != before+1 || !r.cache.Contains(hashOf(r.t, secret)) {
		r.t.Fatalf("%s: the token's principal is not served from the cache (%+v)", r.name, r.cache.Stats())
	}
}

func hashOf(t testing.TB, secret string) tenancy.TokenHash {
	t.Helper()
	h, err := tenancy.HashToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// world is a small tenant tree of its own, so that each case of a test
// changes nothing another case reads: manager m (top level) → user u →
// subaccount s (both privileges, granted u's device), and another
// manager n; each account has a token "<account>-all" with "*".
type world struct {
	ids     map[string]int64 // account and token ids by role: m, n, u, s, tok:u, ...
	secrets map[string]string
}

func newWorld(t *testing.T, db *storagetest.DB, tag string) world {
	t.Helper()
	ctx := context.Background()
	w := world{ids: map[string]int64{}, secrets: map[string]string{}}
	name := func(role string) string { return tag + "-" + role }
	imei := fmt.Sprintf("%015d", replicaSeq.Add(1)*1000+int64(len(tag)))
	doc := map[string]any{
		"accounts": []map[string]any{
			{"username": name("m"), "type": "manager"},
			{"username": name("n"), "type": "manager"},
			{"username": name("u"), "type": "user", "manager": name("m")},
			{"username": name("s"), "type": "subaccount", "manager": name("u"), "privileges": []string{"reports", "event_notifications"}, "objects": []string{imei}},
		},
		"objects":  []map[string]any{{"imei": imei, "account": name("u"), "name": "Truck"}},
		"services": []map[string]any{{"account": name("u"), "imei": imei, "name": "Oil"}},
	}
	var tokens []map[string]any
	for _, role := range []string{"m", "n", "u", "s"} {
		secret, err := tenancy.NewTokenSecret()
		if err != nil {
			t.Fatal(err)
		}
		w.secrets[role] = secret
		tokens = append(tokens, map[string]any{"account": name(role), "name": name(role) + "-all", "secret": secret, "permissions": []string{"*"}})
	}
	doc["tokens"] = tokens
	b, _ := json.Marshal(doc)
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(b)); err != nil {
		t.Fatalf("world %s: %v", tag, err)
	}
	for _, role := range []string{"m", "n", "u", "s"} {
		var acct, tok int64
		if err := db.NewRaw("SELECT a.id, t.id FROM accounts a JOIN tokens t ON t.account_id = a.id WHERE a.username = ?", name(role)).Scan(ctx, &acct, &tok); err != nil {
			t.Fatal(err)
		}
		w.ids[role], w.ids["tok:"+role] = acct, tok
	}
	return w
}

// exec runs SQL with {m}, {n}, {u}, {s} (account ids) and {tok:u} ...
// (token ids) replaced, on the test's own connection: a change made
// outside any replica (psql, the CLI, an import).
func (w world) exec(t *testing.T, db *storagetest.DB, sql string) {
	t.Helper()
	var pairs []string
	for k, v := range w.ids {
		pairs = append(pairs, "{"+k+"}", fmt.Sprint(v))
	}
	if _, err := db.ExecContext(context.Background(), strings.NewReplacer(pairs...).Replace(sql)); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestAuthCacheRevocationAcrossReplicas: a token revoked through replica
// A (the management route, then the CLI's store call) is refused by A on
// its next request and by B on its next request once B's listener has
// received the changes committed before it (the barrier is a notification
// sent after the revocation committed, which PostgreSQL delivers after
// the revocation's own).
func TestAuthCacheRevocationAcrossReplicas(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	a := newCachedReplica(t, db, replicaOptions{})
	b := newCachedReplica(t, db, replicaOptions{})
	w := newWorld(t, db, "rev")

	t.Run("management_route", func(t *testing.T) {
		victim := w.secrets["u"]
		a.cacheByUse(victim)
		b.cacheByUse(victim)
		if got := a.do(http.MethodDelete, fmt.Sprintf("/tokens/%d", w.ids["tok:u"]), w.secrets["m"], nil); got.status != http.StatusNoContent {
			t.Fatalf("DELETE /tokens: %d %s", got.status, got.code)
		}
		// A waited for its own cache before answering: no barrier.
		if got := a.get("/me", victim); got.status != http.StatusUnauthorized || got.code != "INVALID_TOKEN" {
			t.Fatalf("replica A after the revocation: %d %s, want 401 INVALID_TOKEN", got.status, got.code)
		}
		b.sync()
		if b.cache.Contains(hashOf(t, victim)) {
			t.Fatal("replica B still caches the revoked token")
		}
		if got := b.get("/me", victim); got.status != http.StatusUnauthorized || got.code != "INVALID_TOKEN" {
			t.Fatalf("replica B after the revocation: %d %s, want 401 INVALID_TOKEN", got.status, got.code)
		}
	})
	t.Run("cli_store", func(t *testing.T) {
		victim := w.secrets["s"]
		a.cacheByUse(victim)
		b.cacheByUse(victim)
		cli := storage.NewStore(db.DB) // the connection `fleetapi token revoke` would use
		if err := cli.RevokeToken(context.Background(), w.ids["tok:s"]); err != nil {
			t.Fatal(err)
		}
		for _, r := range []*cachedReplica{a, b} {
			r.sync()
			if got := r.get("/me", victim); got.status != http.StatusUnauthorized || got.code != "INVALID_TOKEN" {
				t.Fatalf("%s after the revocation: %d %s, want 401 INVALID_TOKEN", r.name, got.status, got.code)
			}
		}
		// Tokens nobody changed stay cached.
		if !a.cache.Contains(hashOf(t, w.secrets["m"])) {
			t.Error("revoking one token dropped another's principal")
		}
	})
}

// TestAuthCacheListenerLost: with the listener's connection killed, the
// cache is distrusted at once (bypassed and emptied), a token revoked
// meanwhile is refused, nothing enters the cache until the listener has
// reconnected, and the reconnection starts from an empty cache.
func TestAuthCacheListenerLost(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	hold := make(chan struct{})
	a := newCachedReplica(t, db, replicaOptions{})
	b := newCachedReplica(t, db, replicaOptions{hold: hold})
	w := newWorld(t, db, "lost")
	victim, other := w.secrets["u"], w.secrets["s"]
	b.cacheByUse(victim)
	b.cacheByUse(other)

	var killed int
	if err := db.NewRaw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = ? AND query LIKE 'LISTEN%'`, b.name).Scan(context.Background(), &killed); err != nil || killed != 1 {
		t.Fatalf("terminate the listener's backend: %d terminated, %v", killed, err)
	}
	b.waitState(false) // the listener now waits on hold before reconnecting
	if s := b.cache.Stats(); s.Trusted || s.Entries != 0 {
		t.Fatalf("after the connection loss: %+v, want an untrusted, empty cache", s)
	}
	if got := a.do(http.MethodDelete, fmt.Sprintf("/tokens/%d", w.ids["tok:u"]), w.secrets["m"], nil); got.status != http.StatusNoContent {
		t.Fatalf("DELETE /tokens: %d %s", got.status, got.code)
	}
	bypassed := b.cache.Stats().Bypasses
	if got := b.get("/me", victim); got.status != http.StatusUnauthorized || got.code != "INVALID_TOKEN" {
		t.Fatalf("replica B while disconnected: %d %s, want 401 INVALID_TOKEN", got.status, got.code)
	}
	for range 2 {
		if got := b.get("/me", other); got.status != http.StatusOK {
			t.Fatalf("replica B while disconnected, a valid token: %d %s", got.status, got.code)
		}
	}
	if s := b.cache.Stats(); s.Bypasses != bypassed+3 || s.Entries != 0 {
		t.Fatalf("while disconnected: %+v, want 3 more bypasses and no entry", s)
	}

	close(hold)
	b.waitState(true)
	if s := b.cache.Stats(); !s.Trusted || s.Entries != 0 {
		t.Fatalf("after reconnecting: %+v, want a trusted, empty cache", s)
	}
	if got := b.get("/me", victim); got.status != http.StatusUnauthorized {
		t.Fatalf("replica B after reconnecting: %d, want 401", got.status)
	}
	b.cacheByUse(other)
}

// TestAuthCacheInvalidation enumerates what a principal is made of: each
// change, made outside the replica, reaches the replica's next request
// (after the barrier), and drops the cached principal where it is part of
// it; expiry by time needs no notification and is judged on the cached
// principal.
func TestAuthCacheInvalidation(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	r := newCachedReplica(t, db, replicaOptions{maxAge: 1000 * time.Hour})
	today := time.Now().UTC().Format(time.DateOnly)
	cases := []struct {
		name  string
		role  string // whose token
		setup string // before the principal is cached
		// change is SQL on the test's own connection; advance moves the
		// replica's clock instead.
		change  string
		advance time.Duration
		method  string
		path    string
		// want is the status and code after the change; before, the status
		// before it.
		before     int
		want       int
		wantCode   string
		check      func(t *testing.T, a answer)
		notPartOf  bool // not part of the principal: not dropped from the cache
		stillCache bool // judged on the cached principal
	}{
		{name: "token_revoked", role: "u", change: "UPDATE tokens SET revoked_at = now() WHERE id = {tok:u}",
			path: "/me", before: 200, want: 401, wantCode: "INVALID_TOKEN"},
		{name: "token_deleted", role: "u", change: "DELETE FROM tokens WHERE id = {tok:u}",
			path: "/me", before: 200, want: 401, wantCode: "INVALID_TOKEN"},
		{name: "tokens_truncated", role: "u", change: "TRUNCATE tokens",
			path: "/me", before: 200, want: 401, wantCode: "INVALID_TOKEN"},
		{name: "token_expiry_moved_back", role: "u", change: "UPDATE tokens SET expires_at = now() - interval '1 minute' WHERE id = {tok:u}",
			path: "/me", before: 200, want: 401, wantCode: "TOKEN_EXPIRED"},
		{name: "token_expiry_lifted", role: "u", setup: "UPDATE tokens SET expires_at = now() + interval '1 hour' WHERE id = {tok:u}",
			change: "UPDATE tokens SET expires_at = NULL WHERE id = {tok:u}", advance: 2 * time.Hour,
			path: "/me", before: 200, want: 200},
		{name: "token_permissions_narrowed", role: "u", change: "UPDATE tokens SET permissions = '{GET /me}' WHERE id = {tok:u}",
			path: "/services", before: 200, want: 403, wantCode: "TOKEN_PERMISSION_DENIED"},
		{name: "token_rate_limit_changed", role: "u", change: "UPDATE tokens SET rate_limit = 7 WHERE id = {tok:u}",
			path: "/me", before: 200, want: 200, check: func(t *testing.T, a answer) {
				if got := a.header.Get("RateLimit-Limit"); got != "7" {
					t.Errorf("RateLimit-Limit %q, want 7", got)
				}
			}},
		{name: "account_deactivated", role: "u", change: "UPDATE accounts SET active = false WHERE id = {u}",
			path: "/me", before: 200, want: 401, wantCode: "ACCOUNT_INACTIVE"},
		{name: "account_reactivated", role: "u", setup: "UPDATE accounts SET active = false WHERE id = {u}",
			change: "UPDATE accounts SET active = true WHERE id = {u}", path: "/me", before: 401, want: 200},
		{name: "manager_deactivated", role: "u", change: "UPDATE accounts SET active = false WHERE id = {m}",
			path: "/me", before: 200, want: 401, wantCode: "ACCOUNT_INACTIVE"},
		{name: "grandparent_deactivated", role: "s", change: "UPDATE accounts SET active = false WHERE id = {m}",
			path: "/me", before: 200, want: 401, wantCode: "ACCOUNT_INACTIVE"},
		{name: "account_expired", role: "u", change: "UPDATE accounts SET account_expire = true, account_expire_dt = '2020-01-01' WHERE id = {u}",
			path: "/me", before: 200, want: 401, wantCode: "ACCOUNT_EXPIRED"},
		{name: "parent_expired", role: "s", change: "UPDATE accounts SET account_expire = true, account_expire_dt = '2020-01-01' WHERE id = {u}",
			path: "/me", before: 200, want: 401, wantCode: "ACCOUNT_EXPIRED"},
		{name: "account_made_read_only", role: "u", change: "UPDATE accounts SET read_only = true WHERE id = {u}",
			path: "/me", before: 200, want: 200, check: wantReadOnly(true)},
		{name: "manager_made_read_only", role: "s", change: "UPDATE accounts SET read_only = true WHERE id = {m}",
			path: "/me", before: 200, want: 200, check: wantReadOnly(true)},
		{name: "privilege_removed", role: "s", change: "UPDATE accounts SET privileges = '{event_notifications}' WHERE id = {s}",
			path: "/reports", before: 200, want: 403, wantCode: "PRIVILEGE_REQUIRED"},
		{name: "moved_under_inactive_manager", role: "u", setup: "UPDATE accounts SET active = false WHERE id = {n}",
			change: "UPDATE accounts SET manager_id = {n} WHERE id = {u}", path: "/me", before: 200, want: 401, wantCode: "ACCOUNT_INACTIVE"},
		{name: "grants_removed", role: "s", change: "DELETE FROM object_grants WHERE subaccount_id = {s}",
			path: "/services", before: 200, want: 200, notPartOf: true, check: func(t *testing.T, a answer) {
				if items, _ := a.body["data"].([]any); len(items) != 0 {
					t.Errorf("%d services after the grants were removed, want 0", len(items))
				}
			}},
		{name: "token_expires_by_time", role: "u", setup: "UPDATE tokens SET expires_at = now() + interval '1 hour' WHERE id = {tok:u}",
			advance: 2 * time.Hour, path: "/me", before: 200, want: 401, wantCode: "TOKEN_EXPIRED", stillCache: true},
		{name: "account_expires_by_time", role: "u", setup: "UPDATE accounts SET account_expire = true, account_expire_dt = '" + today + "'::date + 1 WHERE id = {u}",
			advance: 72 * time.Hour, path: "/me", before: 200, want: 401, wantCode: "ACCOUNT_EXPIRED", stillCache: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, db, fmt.Sprintf("inv%d", i))
			secret := w.secrets[c.role]
			if c.setup != "" {
				w.exec(t, db, c.setup)
			}
			if got := r.get(c.path, secret); got.status != c.before {
				t.Fatalf("before the change: %d %s, want %d", got.status, got.code, c.before)
			}
			r.cacheByUse(secret)
			if c.change != "" {
				w.exec(t, db, c.change)
			}
			r.offset.Store(int64(c.advance))
			defer r.offset.Store(0)
			r.sync()
			cached := r.cache.Contains(hashOf(t, secret))
			switch {
			case c.stillCache || c.notPartOf:
				if !cached {
					t.Error("the principal was dropped from the cache, want it kept")
				}
			case cached:
				t.Error("the principal is still cached after the change")
			}
			hits := r.cache.Stats().Hits
			got := r.get(c.path, secret)
			if got.status != c.want || got.code != c.wantCode {
				t.Fatalf("after the change: %d %q, want %d %q", got.status, got.code, c.want, c.wantCode)
			}
			if c.stillCache && r.cache.Stats().Hits != hits+1 {
				t.Error("the answer did not come from the cached principal")
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}

// wantEmail checks the e-mail of a GET /me answer.
func wantEmail(want string) func(*testing.T, answer) {
	return func(t *testing.T, a answer) {
		t.Helper()
		data, _ := a.body["data"].(map[string]any)
		if got := data["email"]; got != want {
			t.Errorf("email %v, want %s", got, want)
		}
	}
}

// wantRateLimit checks the RateLimit-Limit header of an answer: the
// tightest budget, the account's when it is the lowest.
func wantRateLimit(want string) func(*testing.T, answer) {
	return func(t *testing.T, a answer) {
		t.Helper()
		if got := a.header.Get("RateLimit-Limit"); got != want {
			t.Errorf("RateLimit-Limit %q, want %q", got, want)
		}
	}
}

// wantItems checks the number of items of a list answer.
func wantItems(want int) func(*testing.T, answer) {
	return func(t *testing.T, a answer) {
		t.Helper()
		if items, _ := a.body["data"].([]any); len(items) != want {
			t.Errorf("%d items, want %d: %v", len(items), want, a.body["data"])
		}
	}
}

func wantReadOnly(want bool) func(*testing.T, answer) {
	return func(t *testing.T, a answer) {
		t.Helper()
		data, _ := a.body["data"].(map[string]any)
		perms, _ := data["permissions"].(map[string]any)
		if got, _ := perms["read_only"].(bool); got != want {
			t.Errorf("permissions.read_only %v, want %v (%v)", got, want, perms)
		}
	}
}

// TestAuthCacheBound: unknown tokens take no place in the cache, a token
// refused as unknown works as soon as it exists (no negative caching),
// and the cache never holds more principals than its size.
func TestAuthCacheBound(t *testing.T) {
	t.Parallel()
	db := storagetest.New(t)
	const size = 3
	r := newCachedReplica(t, db, replicaOptions{cacheSize: size})
	for range 50 {
		secret, err := tenancy.NewTokenSecret()
		if err != nil {
			t.Fatal(err)
		}
		if got := r.get("/me", secret); got.status != http.StatusUnauthorized {
			t.Fatalf("unknown token: %d", got.status)
		}
	}
	if s := r.cache.Stats(); s.Entries != 0 || s.Misses < 50 {
		t.Fatalf("after 50 unknown tokens: %+v, want no entry", s)
	}

	// Refused while unknown, accepted once created: nothing negative is kept.
	w := newWorld(t, db, "bound")
	fresh, err := tenancy.NewTokenSecret()
	if err != nil {
		t.Fatal(err)
	}
	if got := r.get("/me", fresh); got.status != http.StatusUnauthorized {
		t.Fatalf("not yet created: %d", got.status)
	}
	doc := fmt.Sprintf(`{"tokens": [{"account": "bound-u", "name": "fresh", "secret": %q, "permissions": ["*"]}]}`, fresh)
	if _, err := importfile.Load(context.Background(), db.DB, strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	if got := r.get("/me", fresh); got.status != http.StatusOK {
		t.Fatalf("just created: %d %s, want 200", got.status, got.code)
	}

	evicted := r.cache.Stats().Evictions
	for _, role := range []string{"m", "n", "u", "s"} {
		r.cacheByUse(w.secrets[role])
		if s := r.cache.Stats(); s.Entries > size {
			t.Fatalf("%d entries, bound %d", s.Entries, size)
		}
	}
	if s := r.cache.Stats(); s.Entries != size || s.Evictions < evicted+2 {
		t.Fatalf("after 5 tokens in a cache of %d: %+v", size, s)
	}
	// The least recently used went first: the newest are held.
	for _, role := range []string{"n", "u", "s"} {
		if !r.cache.Contains(hashOf(t, w.secrets[role])) {
			t.Errorf("token of %s not cached, want the most recent ones held", role)
		}
	}
}
