package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The lock order of every write path (docs/locking.md) is tested by
// running every pair of write operations at once, through the real HTTP
// stack, on overlapping targets: writeOps is the one table of them, and
// TestWritePairs generates the pairs from it. A new write route is one
// entry of writeOps.

// lockWorld is what one round of a pair writes on: a user U under the demo
// manager fleetco with its subaccount S, a second user V, two devices of U
// (d1 granted to S), and tokens: U's own, S's (minted by U's), and x, a
// token of U minted by U's with an heir xs for S (the lineage a
// revocation follows). Every name carries the world's number.
type lockWorld struct {
	n            int64
	m            string // fleetco's secret
	mID, u, s, v int64
	uName, sName string
	tU, tS       string
	x, xs        int64
	d1, d2       int64
	imei1, imei2 string
	// ev, svc and rep are U's event rule, service record and report on
	// d2 (the device no move takes).
	ev, svc, rep int64
	keyed        bool
	twoServers   bool
	servers      [2]*testAPI
	mu           sync.Mutex
	createdIDs   map[string][]int64 // per keyed create: the ids its 201s named
}

// writeOutcome is one write's answer: its op, status, error code, request
// id, whether it was a replay, and whether it is a management write
// (audited).
type writeOutcome struct {
	op, code, requestID string
	status              int
	replayed, audited   bool
	// actor is the calling account (0: not one of the world's three).
	actor int64
}

// writeOp is one write operation of the table: do sends copy c of it
// through srv in the world w. ok lists the error codes it may answer
// when a concurrent write changed its target (a 2xx always is; a 5xx, a
// 400 or IDEMPOTENCY_KEY_REUSED never is).
type writeOp struct {
	name    string
	audited bool // a management write: one audit event per write answered 2xx
	do      func(w *lockWorld, srv *testAPI, c int) writeOutcome
	ok      []string
}

// gone are the answers of a write whose caller or target was erased by
// the other write of the pair: its token no longer authenticates (401),
// or its target is no longer found (404).
var gone = []string{api.CodeInvalidToken, api.CodeNotFound}

// send sends a JSON write with the token and, in a keyed round, the
// Idempotency-Key key (empty: none).
func (w *lockWorld) send(srv *testAPI, op, method, path, token, body, key string) writeOutcome {
	var h []string
	if key != "" && w.keyed {
		h = []string{"Idempotency-Key", fmt.Sprintf("lk%d-%s", w.n, key)}
	}
	r := srv.send(method, path, token, body, h...)
	out := writeOutcome{op: op, status: r.status, requestID: r.header.Get("X-Request-Id"),
		replayed: r.header.Get("Idempotent-Replayed") == "true", actor: map[string]int64{w.m: w.mID, w.tU: w.u, w.tS: w.s}[token]}
	if r.status >= 400 {
		if e, ok := r.body["error"].(map[string]any); ok {
			out.code, _ = e["code"].(string)
		}
	}
	if r.status == http.StatusCreated && key != "" && w.keyed {
		if d, ok := r.body["data"].(map[string]any); ok {
			id, _ := d["id"].(float64)
			for _, k := range []string{"passenger_id", "event_id", "service_id", "report_id"} {
				if id == 0 {
					id, _ = d[k].(float64)
				}
			}
			w.mu.Lock()
			w.createdIDs[op] = append(w.createdIDs[op], int64(id))
			w.mu.Unlock()
		}
	}
	return out
}

// name is a name unique to copy c of a create, or shared by the copies of
// a keyed round (they are one request retried).
func (w *lockWorld) name(op string, c int) string {
	if w.keyed {
		return fmt.Sprintf("lk%d-%s", w.n, op)
	}
	return fmt.Sprintf("lk%d-%s-%d", w.n, op, c)
}

// storeOutcome is the outcome of a write of the command line or a
// background job, which call storage directly: its error as the status
// the API would answer.
func storeOutcome(op string, err error) writeOutcome {
	out := writeOutcome{op: op, status: http.StatusOK}
	switch {
	case err == nil:
	case errors.Is(err, storage.ErrNotFound):
		out.status, out.code = http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, storage.ErrUnavailable):
		out.status, out.code = http.StatusServiceUnavailable, err.Error()
	case errors.Is(err, storage.ErrInvalid):
		out.status, out.code = http.StatusBadRequest, err.Error()
	default:
		out.status, out.code = http.StatusInternalServerError, err.Error()
	}
	return out
}

// writeOps is the table of write operations: every write route of the
// API, the command line's token and erase writes, the counter fold and
// the metering flush, each on targets that overlap the others' (the caller's own
// account, a parent and its child, a device and the subaccount it is
// granted to, a token and its heirs).
var writeOps = []writeOp{
	{name: "POST /accounts (a user's subaccount, by the user)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "sub", "POST", "/api/v2/accounts", w.tU,
				// An explicit rate_limit: an omitted one inherits the caller's
				// account's, which the PATCH below changes, and a keyed retry
				// of another inherited value is another request.
				fmt.Sprintf(`{"username":%q,"type":"subaccount","manager_id":%d,"rate_limit":1000}`, w.name("sub", c), w.u), "sub")
		}},
	{name: "POST /accounts (a user of the manager's own account)", audited: true,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "user", "POST", "/api/v2/accounts", w.m,
				fmt.Sprintf(`{"username":%q,"type":"user","manager_id":%d}`, w.name("user", c), w.mID), "user")
		}},
	{name: "POST /objects (the caller's own account)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "own-object", "POST", "/api/v2/objects", w.tU,
				fmt.Sprintf(`{"imei":%q,"account_id":%d}`, w.name("oo", c), w.u), "own-object")
		}},
	{name: "POST /objects (the manager's user)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "object", "POST", "/api/v2/objects", w.m,
				fmt.Sprintf(`{"imei":%q,"account_id":%d}`, w.name("ob", c), w.u), "object")
		}},
	{name: "POST /tokens (the caller's own account)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "own-token", "POST", "/api/v2/tokens", w.tU,
				fmt.Sprintf(`{"name":%q,"permissions":["GET /me"]}`, w.name("ot", c)), "own-token")
		}},
	{name: "POST /tokens (the user's subaccount)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "sub-token", "POST", "/api/v2/tokens", w.tU,
				fmt.Sprintf(`{"account_id":%d,"name":%q,"permissions":["GET /me"]}`, w.s, w.name("st", c)), "sub-token")
		}},
	{name: "POST /passengers (a subaccount: its parent's)", ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "sub-passenger", "POST", "/api/v2/passengers", w.tS,
				fmt.Sprintf(`{"passenger_name":%q}`, w.name("sp", c)), "sub-passenger")
		}},
	{name: "POST /passengers (the caller's own account)", ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "passenger", "POST", "/api/v2/passengers", w.tU,
				fmt.Sprintf(`{"passenger_name":%q}`, w.name("up", c)), "passenger")
		}},
	{name: "PATCH /accounts (a user's rate limit and quotas)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "limits", "PATCH", fmt.Sprint("/api/v2/accounts/", w.u), w.m,
				fmt.Sprintf(`{"rate_limit":%d,"quotas":{"devices":%d,"tokens":%d}}`, 100000+c, 1000+c, 1000+c), "")
		}},
	{name: "PATCH /accounts (a subaccount, by its user)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "sub-email", "PATCH", fmt.Sprint("/api/v2/accounts/", w.s), w.tU,
				fmt.Sprintf(`{"email":"lk%d-%d@sub.example"}`, w.n, c), "")
		}},
	{name: "PUT /accounts/{id}/objects (grants)", audited: true, ok: append([]string{api.CodeManagementDenied}, gone...),
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			imei := fmt.Sprintf(`[%q,%q]`, w.imei1, w.imei2)
			if c%2 == 1 {
				imei = fmt.Sprintf(`[%q]`, w.imei1)
			}
			return w.send(srv, "grants", "PUT", fmt.Sprintf("/api/v2/accounts/%d/objects", w.s), w.tU, `{"imei":`+imei+`}`, "")
		}},
	{name: "PATCH /objects/{id} (a move between users and back)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			to := w.v
			if c%2 == 1 {
				to = w.u
			}
			return w.send(srv, "move", "PATCH", fmt.Sprint("/api/v2/objects/", w.d1), w.m, fmt.Sprintf(`{"account_id":%d}`, to), "")
		}},
	{name: "POST /readings (the user's two devices, by the user)", ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "readings", "POST", "/api/v2/readings", w.tU, readingsPair(w.imei1, w.imei2, c), "")
		}},
	{name: "POST /readings (the same devices the other way round, by the manager)", ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "readings-m", "POST", "/api/v2/readings", w.m, readingsPair(w.imei2, w.imei1, c+1000), "")
		}},
	{name: "POST /events (a rule of the user's d2, by the user)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "event", "POST", "/api/v2/events", w.tU,
				fmt.Sprintf(`{"type":"overspeed","name":%q,"active":true,"checked_value":"80","imei":[%q]}`, w.name("ev", c), w.imei2), "event")
		}},
	{name: "PATCH /events/{id} (the rule of d2: a new threshold, its state reset, by the manager)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "event-patch", "PATCH", fmt.Sprint("/api/v2/events/", w.ev), w.m, fmt.Sprintf(`{"checked_value":"%d"}`, 50+c), "")
		}},
	{name: "POST /services/{id}/done (the service of d2, by the user)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "service-done", "POST", fmt.Sprintf("/api/v2/services/%d/done", w.svc), w.tU, fmt.Sprintf(`{"odometer":%d}`, c), "")
		}},
	{name: "PATCH /reports/{id} (the report of d2, by the user)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "report-patch", "PATCH", fmt.Sprint("/api/v2/reports/", w.rep), w.tU, fmt.Sprintf(`{"speed_limit":%d}`, 80+c), "")
		}},
	{name: "DELETE /tokens/{id} (a token with an heir)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "revoke", "DELETE", fmt.Sprint("/api/v2/tokens/", w.x), w.tU, "", "")
		}},
	{name: "DELETE /accounts/{id} (a subaccount, by its user)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "erase-sub", "DELETE", fmt.Sprint("/api/v2/accounts/", w.s), w.tU, "", "")
		}},
	{name: "DELETE /accounts/{id} (a user, by its manager)", audited: true, ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return w.send(srv, "erase-user", "DELETE", fmt.Sprint("/api/v2/accounts/", w.u), w.m, "", "")
		}},
	{name: "fleetapi token create", ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			_, _, err := srv.store.CreateToken(context.Background(), storage.NewToken{Username: w.uName,
				Name: fmt.Sprintf("lk%d-cli-%d", w.n, c), Permissions: []string{"GET /me"}})
			return storeOutcome("cli-token", err)
		}},
	{name: "fleetapi token revoke (a token with an heir)", ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			return storeOutcome("cli-revoke", srv.store.RevokeToken(context.Background(), w.x))
		}},
	{name: "fleetapi tenant erase (the subaccount)", ok: gone,
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			_, err := srv.store.EraseAccount(context.Background(), w.sName, false)
			return storeOutcome("cli-erase", err)
		}},
	{name: "counter fold (account_row_counts)",
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			_, err := srv.store.FoldCounters(context.Background())
			return storeOutcome("fold", err)
		}},
	{name: "metering flush (usage_daily)",
		do: func(w *lockWorld, srv *testAPI, c int) writeOutcome {
			day := time.Now().UTC()
			var counts []storage.UsageCount
			for _, id := range []int64{w.mID, w.u, w.s, w.v} {
				counts = append(counts, storage.UsageCount{AccountID: id, Day: day, Route: "POST /objects", Requests: 1, Writes: 1})
			}
			return storeOutcome("flush", srv.store.AddUsage(context.Background(), counts))
		}},
}

// pairServer is a server of the pair test: the real router over a pool of
// its own on the test database, as a replica behind a load balancer has.
func pairServer(t testing.TB, base *testAPI, name string) (*testAPI, *bun.DB) {
	t.Helper()
	return poolServer(t, base, name, 8, nil)
}

// poolServer is a server over a pool of its own of size conns on base's
// database, its backends named name (application_name); configure, when
// not nil, adjusts its configuration.
func poolServer(t testing.TB, base *testAPI, name string, conns int, configure func(*api.Config)) (*testAPI, *bun.DB) {
	t.Helper()
	u, err := url.Parse(base.db.DirectURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	db := storage.Open(u.String(), storage.Options{MaxOpenConns: conns})
	store := storage.NewStore(db)
	engine, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store, Ready: store,
		RateLimit: 1_000_000, AuthFailureLimit: 1_000_000}
	if configure != nil {
		configure(&cfg)
	}
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testAPI{t: t, handler: srv.Handler(), store: store, db: base.db, srv: srv}, db
}

// closePairServers closes the servers' pools and waits until their
// backends have exited, so that their statistics (pg_stat_database's
// deadlocks among them) have reached the shared counters.
func closePairServers(t testing.TB, base *testAPI, names []string, pools ...*bun.DB) {
	t.Helper()
	for _, p := range pools {
		_ = p.Close()
	}
	for {
		var n int
		if err := base.db.NewRaw("SELECT count(*) FROM pg_stat_activity WHERE application_name IN (?)", bun.List(names)).
			Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deadlocks reads pg_stat_database.deadlocks of the test database.
func deadlocks(t testing.TB, a *testAPI) int64 {
	t.Helper()
	var n int64
	if err := a.db.NewRaw("SELECT pg_stat_clear_snapshot()").Scan(context.Background(), new(string)); err != nil {
		t.Fatal(err)
	}
	if err := a.db.NewRaw("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").
		Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

var worldSeq atomic.Int64

// insertToken inserts a token of the account with every permission, minted
// from parent (nil: none), and returns its id and secret.
func insertToken(ctx context.Context, db bun.IDB, account int64, name string, parent *int64) (int64, string, error) {
	secret, err := tenancy.NewTokenSecret()
	if err != nil {
		return 0, "", err
	}
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		return 0, "", err
	}
	var id int64
	err = db.NewRaw(`INSERT INTO tokens (account_id, name, hash, permissions, parent_token_id) VALUES (?, ?, ?, '{*}', ?) RETURNING id`,
		account, name, hash[:], parent).Scan(ctx, &id)
	return id, secret, err
}

// insertAccount inserts an account and returns its id.
func insertAccount(ctx context.Context, db bun.IDB, username, typ string, manager int64) (id int64, err error) {
	err = db.NewRaw(`INSERT INTO accounts (username, type, manager_id) VALUES (?, ?, ?) RETURNING id`, username, typ, manager).Scan(ctx, &id)
	return id, err
}

// newLockWorld writes a round's world in one transaction (the writes under
// test are the pair's, not the world's).
func newLockWorld(a *testAPI, mID int64, keyed, two bool, servers [2]*testAPI) (*lockWorld, error) {
	w := &lockWorld{n: worldSeq.Add(1), m: demoToken(a.t, "fleetco-all"), mID: mID, keyed: keyed, twoServers: two,
		servers: servers, createdIDs: map[string][]int64{}}
	w.uName, w.sName = fmt.Sprintf("lk%d-u", w.n), fmt.Sprintf("lk%d-s", w.n)
	w.imei1, w.imei2 = fmt.Sprintf("lk%d-1", w.n), fmt.Sprintf("lk%d-2", w.n)
	err := a.db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		account := func(name, typ string, manager int64) (int64, error) {
			return insertAccount(ctx, tx, name, typ, manager)
		}
		var err error
		if w.u, err = account(w.uName, "user", mID); err != nil {
			return err
		}
		if w.v, err = account(fmt.Sprintf("lk%d-v", w.n), "user", mID); err != nil {
			return err
		}
		if w.s, err = account(w.sName, "subaccount", w.u); err != nil {
			return err
		}
		for _, d := range []struct {
			id   *int64
			imei string
		}{{&w.d1, w.imei1}, {&w.d2, w.imei2}} {
			if err := tx.NewRaw(`INSERT INTO objects (imei, account_id) VALUES (?, ?) RETURNING id`, d.imei, w.u).Scan(ctx, d.id); err != nil {
				return err
			}
		}
		if _, err := tx.NewRaw(`INSERT INTO object_grants (subaccount_id, imei) VALUES (?, ?)`, w.s, w.imei1).Exec(ctx); err != nil {
			return err
		}
		if err := tx.NewRaw(`INSERT INTO events (account_id, type, name, active, checked_value, imei) VALUES (?, 'overspeed', 'lk', true, '90', ARRAY[?])
			RETURNING event_id`, w.u, w.imei2).Scan(ctx, &w.ev); err != nil {
			return err
		}
		if err := tx.NewRaw(`INSERT INTO services (account_id, imei, name, odo, odo_interval, odo_left, odo_left_num, notify_service_expire)
			VALUES (?, ?, 'lk', true, 100, true, 50, true) RETURNING service_id`, w.u, w.imei2).Scan(ctx, &w.svc); err != nil {
			return err
		}
		if err := tx.NewRaw(`INSERT INTO reports (account_id, name, imei) VALUES (?, 'lk', ARRAY[?]) RETURNING report_id`, w.u, w.imei2).Scan(ctx, &w.rep); err != nil {
			return err
		}
		var uTok int64
		if uTok, w.tU, err = insertToken(ctx, tx, w.u, "u", nil); err != nil {
			return err
		}
		if _, w.tS, err = insertToken(ctx, tx, w.s, "s", &uTok); err != nil {
			return err
		}
		if w.x, _, err = insertToken(ctx, tx, w.u, "x", &uTok); err != nil {
			return err
		}
		w.xs, _, err = insertToken(ctx, tx, w.s, "xs", &w.x)
		return err
	})
	return w, err
}

// TestWritePairs runs every pair of write operations of writeOps at once,
// two copies of each, on one round's world, in four rounds: through one
// server and through two (two servers with pools of their own over the
// same primary, like two replicas), without and with an Idempotency-Key
// on the creates (the copies of a keyed create are one request retried).
// Every answer is a 2xx or one of the op's expected refusals (never a
// 5xx, never a 400), PostgreSQL detects no deadlock in the test database
// (pg_stat_database.deadlocks does not move), and every round ends
// consistent: grants only of devices their subaccount's parent owns, row
// counters equal to the rows, one audit event per management write
// answered 2xx and none for another answer or a replay, every keyed
// create's 201s naming one row, nothing left of an erased account.
func TestWritePairs(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
	names := []string{"pairs-a", "pairs-b"}
	var servers [2]*testAPI
	var pools [2]*bun.DB
	for i, name := range names {
		servers[i], pools[i] = pairServer(t, a, name)
	}
	mID := a.accountID(t, "fleetco")
	before := deadlocks(t, a)
	type pair struct{ x, y int }
	var pairs []pair
	for i := range writeOps {
		for j := i; j < len(writeOps); j++ {
			pairs = append(pairs, pair{i, j})
		}
	}
	start := time.Now()
	work := make(chan pair, len(pairs))
	var wg sync.WaitGroup
	var failures sync.Map // pair name → first failure
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				for round := range 4 {
					keyed, two := round >= 2, round%2 == 1
					name := fmt.Sprintf("%s + %s (keyed %v, two servers %v)", writeOps[p.x].name, writeOps[p.y].name, keyed, two)
					w, err := newLockWorld(a, mID, keyed, two, servers)
					if err != nil {
						failures.LoadOrStore(name, err.Error())
						continue
					}
					outs := runPair(w, writeOps[p.x], writeOps[p.y])
					if msg := checkRound(t, a, w, outs); msg != "" {
						failures.LoadOrStore(name, msg)
					}
				}
			}
		}()
	}
	for _, p := range pairs {
		work <- p
	}
	close(work)
	wg.Wait()
	if len(work) > 0 {
		t.Fatalf("%d pairs not run: the pair workers stopped", len(work))
	}
	closePairServers(t, a, names, pools[0], pools[1])
	after := deadlocks(t, a)
	t.Logf("%d pairs of %d write operations, 4 rounds each, in %v", len(pairs), len(writeOps), time.Since(start).Round(time.Millisecond))
	var msgs []string
	failures.Range(func(k, v any) bool {
		msgs = append(msgs, fmt.Sprintf("%s: %s", k, v))
		return true
	})
	slices.Sort(msgs)
	for _, m := range msgs {
		t.Error(m)
	}
	if after != before {
		t.Errorf("PostgreSQL detected %d deadlocks in the test database", after-before)
	}
	checkCounters(t, a)
}

// runPair sends two copies of each write at once (released together),
// through one server or, in a two-server round, each copy of each write
// through the other server than the one before.
func runPair(w *lockWorld, x, y writeOp) []writeOutcome {
	ops := []writeOp{x, x, y, y}
	outs := make([]writeOutcome, len(ops))
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i, op := range ops {
		srv := w.servers[0]
		if w.twoServers {
			srv = w.servers[i%2]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			out := op.do(w, srv, i)
			out.audited = op.audited
			out.op = op.name
			outs[i] = out
		}()
	}
	close(release)
	wg.Wait()
	return outs
}

// checkRound checks a round's answers and the state it left; it returns
// what is wrong, empty when nothing is.
func checkRound(t *testing.T, a *testAPI, w *lockWorld, outs []writeOutcome) string {
	t.Helper()
	ctx := context.Background()
	var problems []string
	opOf := map[string]writeOp{}
	for _, op := range writeOps {
		opOf[op.name] = op
	}
	for _, o := range outs {
		if o.status >= 200 && o.status < 300 {
			continue
		}
		if !slices.Contains(opOf[o.op].ok, o.code) || o.status >= 500 || o.status == http.StatusBadRequest {
			problems = append(problems, fmt.Sprintf("%s answered %d %s", o.op, o.status, o.code))
		}
	}
	for op, ids := range w.createdIDs {
		if len(slices.Compact(slices.Sorted(slices.Values(ids)))) > 1 {
			problems = append(problems, fmt.Sprintf("the keyed %s created %v", op, ids))
		}
	}
	for _, o := range outs {
		if !o.audited || o.requestID == "" {
			continue
		}
		var n int
		if err := a.db.NewRaw("SELECT count(*) FROM audit_events WHERE request_id = ? AND action <> ?", o.requestID,
			policy.ActionTokenRevoke).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		var revokes int
		if err := a.db.NewRaw("SELECT count(*) FROM audit_events WHERE request_id = ? AND action = ?", o.requestID,
			policy.ActionTokenRevoke).Scan(ctx, &revokes); err != nil {
			t.Fatal(err)
		}
		ok := o.status >= 200 && o.status < 300 && !o.replayed
		var actorGone bool
		if err := a.db.NewRaw("SELECT ? <> 0 AND NOT EXISTS (SELECT 1 FROM accounts WHERE id = ?)", o.actor, o.actor).Scan(ctx, &actorGone); err != nil {
			t.Fatal(err)
		}
		switch {
		case actorGone:
			// The other write erased the caller: its events' request ids
			// read "[erased]" (a client chooses its X-Request-Id), so none
			// may still carry this one.
			if n+revokes != 0 {
				problems = append(problems, fmt.Sprintf("%s: %d audit events of an erased caller keep its request id", o.op, n+revokes))
			}
		case strings.HasPrefix(o.op, "DELETE /tokens") && ok && revokes < 1,
			strings.HasPrefix(o.op, "DELETE /tokens") && !ok && revokes != 0,
			!strings.HasPrefix(o.op, "DELETE /tokens") && ok && n != 1,
			!strings.HasPrefix(o.op, "DELETE /tokens") && !ok && n != 0:
			problems = append(problems, fmt.Sprintf("%s answered %d (replayed %v) with %d audit events (%d revocations)",
				o.op, o.status, o.replayed, n, revokes))
		}
	}
	var bad int
	if err := a.db.NewRaw(`SELECT count(*) FROM object_grants g JOIN accounts s ON s.id = g.subaccount_id
		JOIN objects o ON o.imei = g.imei WHERE o.account_id IS DISTINCT FROM s.manager_id AND s.manager_id = ?`, w.u).Scan(ctx, &bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		problems = append(problems, fmt.Sprintf("%d grants of a device the subaccount's parent does not own", bad))
	}
	var uLeft, sLeft bool
	if err := a.db.NewRaw(`SELECT NOT EXISTS (SELECT 1 FROM accounts WHERE id = ?), NOT EXISTS (SELECT 1 FROM accounts WHERE id = ?)`,
		w.u, w.s).Scan(ctx, &uLeft, &sLeft); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []struct {
		erased bool
		id     int64
	}{{uLeft, w.u}, {sLeft, w.s}} {
		if !gone.erased {
			continue
		}
		var left int
		if err := a.db.NewRaw(`SELECT (SELECT count(*) FROM objects WHERE account_id = ?0) + (SELECT count(*) FROM tokens WHERE account_id = ?0)
			+ (SELECT count(*) FROM passengers WHERE account_id = ?0) + (SELECT count(*) FROM accounts WHERE manager_id = ?0)
			+ (SELECT count(*) FROM object_grants WHERE subaccount_id = ?0) + (SELECT count(*) FROM account_row_counts WHERE account_id = ?0)
			+ (SELECT count(*) FROM idempotency_keys WHERE account_id = ?0) + (SELECT count(*) FROM events WHERE account_id = ?0)
			+ (SELECT count(*) FROM services WHERE account_id = ?0) + (SELECT count(*) FROM reports WHERE account_id = ?0)`, gone.id).Scan(ctx, &left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			problems = append(problems, fmt.Sprintf("%d rows left of the erased account %d", left, gone.id))
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return strings.Join(problems, "; ")
}

// checkCounters checks that the row counters equal the rows, per counted
// table and account.
func checkCounters(t *testing.T, a *testAPI) {
	t.Helper()
	for _, table := range []string{"objects", "passengers", "services", "reports", "events"} {
		var bad int
		if err := a.db.NewRaw(`SELECT count(*) FROM (SELECT account_id, sum(n) AS n FROM account_row_counts WHERE resource = ? GROUP BY account_id) c
			FULL JOIN (SELECT account_id, count(*) AS n FROM `+table+` GROUP BY account_id) r USING (account_id)
			WHERE COALESCE(c.n, 0) <> COALESCE(r.n, 0)`, table).Scan(context.Background(), &bad); err != nil {
			t.Fatal(err)
		}
		if bad != 0 {
			t.Errorf("%s: the row counters of %d accounts differ from the rows", table, bad)
		}
	}
}

// readingsPair is a POST /readings body of one reading of each device,
// first a then b, at a time of copy c's own (a retried copy is duplicates).
func readingsPair(a, b string, c int) string {
	ts := time.Now().UTC().Add(-time.Hour).Add(time.Duration(c) * time.Millisecond).Truncate(time.Millisecond).Format(time.RFC3339Nano)
	return fmt.Sprintf(`{"readings":[{"imei":%q,"time":%q,"speed":90,"odometer":%d},{"imei":%q,"time":%q,"speed":10}]}`, a, ts, 1000+c, b, ts)
}
