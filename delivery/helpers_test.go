package delivery_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/delivery"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/webhook"
)

// The demo devices the tests name.
const (
	acmeTruck   = "356938035643809" // acme's, granted to acme-night
	acmeVan     = "356938035643817" // acme's, not granted
	globexReefr = "861073032104551" // globex's, granted to globex-day
)

// world is a real database with the demo data, the real policy and a key
// ring, for senders to run on.
type world struct {
	t      testing.TB
	db     *storagetest.DB
	store  *storage.Store
	policy *policy.Engine
	keys   *webhook.KeyRing
	// ingest is the admin's objects scope, which the tests ingest with;
	// clock is the time of the next readings.
	ingest policy.Scope
	clock  time.Time
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	db := storagetest.New(t)
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	engine, err := policy.New(ctx, policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, webhook.KeySize)
	_, _ = rand.Read(key)
	keys, err := webhook.NewKeyRing(key)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, db: db, store: storage.NewStore(db.DB), policy: engine, keys: keys, clock: time.Now().Add(-24 * time.Hour).Truncate(time.Second)}
	// an overspeed rule of each device the tests make fire
	w.exec(`INSERT INTO events (account_id, type, name, active, imei, checked_value)
		SELECT account_id, 'overspeed', 'speed of ' || imei, true, ARRAY[imei], '90' FROM objects WHERE imei IN (?, ?)`, acmeVan, globexReefr)
	admin, err := w.store.AccountByUsername(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if w.ingest, err = engine.Scope(ctx, policy.NewInput(tenancy.Principal{Account: admin}, "POST", "/readings", time.Now()), storage.Objects.Resource()); err != nil {
		t.Fatal(err)
	}
	return w
}

// hook is a webhook of the world: its id and raw secret.
type hook struct {
	id     int64
	secret []byte
}

// addWebhook inserts an active endpoint of username to url with a fresh
// secret sealed by the world's key ring, as POST /webhooks stores it.
func (w *world) addWebhook(username, url string, types ...string) hook {
	w.t.Helper()
	ctx := context.Background()
	if types == nil {
		types = []string{}
	}
	_, raw, err := webhook.NewSecret()
	if err != nil {
		w.t.Fatal(err)
	}
	var id int64
	if err := w.db.NewRaw(`INSERT INTO webhooks (account_id, url, types, secret)
		SELECT id, ?, ?::text[], '\x00' FROM accounts WHERE username = ? RETURNING id`, url, pgdialect.Array(types), username).Scan(ctx, &id); err != nil {
		w.t.Fatalf("webhook of %s: %v", username, err)
	}
	sealed, err := w.keys.Seal(raw, []byte(strconv.FormatInt(id, 10)))
	if err != nil {
		w.t.Fatal(err)
	}
	w.exec(`UPDATE webhooks SET secret = ? WHERE id = ?`, sealed, id)
	return hook{id: id, secret: raw}
}

// notify makes the device imei's overspeed rule fire once through the
// real ingest (a reading at rest, then one at 100 km/h): the one
// statement that stores the notification queues its deliveries. It
// returns the notification's id.
func (w *world) notify(imei string) int64 {
	w.t.Helper()
	ctx := context.Background()
	stop, fast := 0.0, 100.0
	t0 := w.clock
	w.clock = w.clock.Add(2 * time.Second)
	res, err := w.store.IngestReadings(ctx, w.ingest, []storage.Reading{
		{IMEI: imei, Time: t0, Speed: &stop}, {IMEI: imei, Time: t0.Add(time.Second), Speed: &fast}}, time.Now())
	if err != nil {
		w.t.Fatal(err)
	}
	_ = res
	return w.scalar(`SELECT max(id) FROM notifications WHERE imei = ?`, imei)
}

func (w *world) exec(q string, args ...any) {
	w.t.Helper()
	if _, err := w.db.ExecContext(context.Background(), q, args...); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

func (w *world) scalar(q string, args ...any) int64 {
	w.t.Helper()
	var n int64
	if err := w.db.NewRaw(q, args...).Scan(context.Background(), &n); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// states counts the deliveries per state.
func (w *world) states() map[string]int64 {
	w.t.Helper()
	var rows []struct {
		State string
		N     int64
	}
	if err := w.db.NewRaw(`SELECT state, count(*) AS n FROM webhook_deliveries GROUP BY state`).Scan(context.Background(), &rows); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out
}

// client is a delivery client that may reach the loopback receivers of
// the tests over plain http.
func client(timeout time.Duration) *webhook.Client {
	return webhook.NewClient(webhook.Config{AllowHTTP: true, AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: timeout})
}

// start runs a sender on the world until the test ends; adjust, when not
// nil, changes its options first.
func (w *world) start(adjust func(*delivery.Options)) *delivery.Sender {
	w.t.Helper()
	opts := delivery.Options{Store: w.store, Policy: w.policy, Keys: w.keys, Client: client(2 * time.Second),
		Workers: 4, Schedule: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, Poll: 50 * time.Millisecond}
	if adjust != nil {
		adjust(&opts)
	}
	s, err := delivery.New(opts)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	w.t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// eventually polls cond for at most 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 20*time.Second, what, cond)
}

// eventuallyWithin polls cond for at most d.
func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached in %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// received is one request a receiver got.
type received struct {
	id, timestamp, signature string
	body                     []byte
}

// receiver is a test endpoint: answer decides each answer (nil: 204).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{id: r.Header.Get("webhook-id"), timestamp: r.Header.Get("webhook-timestamp"),
			signature: r.Header.Get("webhook-signature"), body: body})
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.answer == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		rc.answer(w, r, n)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// scopeOf is the notifications scope of the account username, as GET
// /notifications/{id} takes it.
func (w *world) scopeOf(username string) policy.Scope {
	w.t.Helper()
	ctx := context.Background()
	a, err := w.store.AccountByUsername(ctx, username)
	if err != nil {
		w.t.Fatal(err)
	}
	in := policy.NewInput(tenancy.Principal{Account: a}, "GET", delivery.Route, time.Now())
	sc, err := w.policy.Scope(ctx, in, storage.Notifications.Resource())
	if err != nil {
		w.t.Fatal(err)
	}
	return sc
}

// apiCaller is an account calling the webhooks API's storage: its
// webhooks scope and its actor.
type apiCaller struct {
	scope policy.Scope
	actor storage.Actor
}

// caller is the account username as a caller of the webhooks routes.
func (w *world) caller(username string) apiCaller {
	w.t.Helper()
	ctx := context.Background()
	a, err := w.store.AccountByUsername(ctx, username)
	if err != nil {
		w.t.Fatal(err)
	}
	in := policy.NewInput(tenancy.Principal{Account: a}, "PATCH", "/webhooks/{id}", time.Now())
	sc, err := w.policy.Scope(ctx, in, storage.Webhooks.Resource())
	if err != nil {
		w.t.Fatal(err)
	}
	return apiCaller{scope: sc, actor: storage.Actor{AccountID: a.ID}}
}
