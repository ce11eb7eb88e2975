package delivery_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/delivery"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/webhook"
)

// TestDeliverSignedNotification: the receiver gets the notification as
// GET /notifications/{id} shows it, in the envelope of docs/design.md
// §14, with a stable webhook-id and a signature of the current secret
// (and of the old one during a rotation); the attempt is recorded and
// counted in the owner's usage.
func TestDeliverSignedNotification(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, nil)
	h := w.addWebhook("acme", rc.URL+"/hook")
	id := w.notify(acmeVan)
	w.start(nil)
	eventually(t, "one request", func() bool { return len(rc.requests()) == 1 })
	eventually(t, "the delivery succeeded", func() bool { return w.states()[storage.DeliverySucceeded] == 1 })

	got := rc.requests()[0]
	var msgID string
	if err := w.db.NewRaw(`SELECT msg_id FROM webhook_deliveries WHERE notification_id = ?`, id).Scan(context.Background(), &msgID); err != nil {
		t.Fatal(err)
	}
	if got.id != msgID {
		t.Fatalf("webhook-id %q, want %q", got.id, msgID)
	}
	unix, err := strconv.ParseInt(got.timestamp, 10, 64)
	if err != nil || time.Since(time.Unix(unix, 0)) > time.Minute {
		t.Fatalf("webhook-timestamp %q", got.timestamp)
	}
	if want := webhook.Sign(got.id, time.Unix(unix, 0), got.body, h.secret); got.signature != want {
		t.Fatalf("signature %q, want %q", got.signature, want)
	}
	n, err := w.store.NotificationByID(context.Background(), w.scopeOf("acme"), id)
	if err != nil {
		t.Fatal(err)
	}
	wantData, _ := json.Marshal(n)
	var body struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "notification.created" || string(body.Data) != string(wantData) {
		t.Fatalf("body %s, want data %s", got.body, wantData)
	}
	if ts, err := time.Parse(time.RFC3339, body.Timestamp); err != nil || !ts.Equal(n.CreatedAt) {
		t.Fatalf("timestamp %q, want %v", body.Timestamp, n.CreatedAt)
	}
	if a := w.scalar(`SELECT count(*) FROM webhook_attempts WHERE status = 204`); a != 1 {
		t.Fatalf("%d attempts recorded", a)
	}
	if u := w.scalar(`SELECT sum(deliveries_attempted) FROM usage_daily u JOIN accounts a ON a.id = u.account_id WHERE a.username = 'acme'`); u != 1 {
		t.Fatalf("usage: %d deliveries attempted", u)
	}

	// a rotation: both secrets sign until old_secret_until
	_, fresh, _ := webhook.NewSecret()
	sealed, _ := w.keys.Seal(fresh, []byte(strconv.FormatInt(h.id, 10)))
	w.exec(`UPDATE webhooks SET old_secret = secret, old_secret_until = now() + interval '1 day', secret = ? WHERE id = ?`, sealed, h.id)
	w.notify(acmeVan)
	eventually(t, "the second request", func() bool { return len(rc.requests()) == 2 })
	got = rc.requests()[1]
	unix, _ = strconv.ParseInt(got.timestamp, 10, 64)
	if want := webhook.Sign(got.id, time.Unix(unix, 0), got.body, fresh, h.secret); got.signature != want {
		t.Fatalf("rotation: signature %q, want %q", got.signature, want)
	}
}

// TestTestDelivery: a test delivery (no notification) carries its
// webhook's id and the test message.
func TestTestDelivery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, nil)
	h := w.addWebhook("acme", rc.URL)
	w.exec(`INSERT INTO webhook_deliveries (webhook_id, account_id, type) SELECT id, account_id, 'webhook.test' FROM webhooks WHERE id = ?`, h.id)
	w.start(nil)
	eventually(t, "the test delivery", func() bool { return len(rc.requests()) == 1 })
	var body map[string]any
	if err := json.Unmarshal(rc.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	data, _ := body["data"].(map[string]any)
	if body["type"] != "webhook.test" || data["webhook_id"] != float64(h.id) || data["message"] != delivery.TestMessage {
		t.Fatalf("body %v", body)
	}
}

// TestFaultsFollowTheSchedule: every kind of failing receiver is retried
// on the schedule (100 ms, 200 ms) and the delivery fails after the
// third attempt, each attempt recorded with its status or error; a 429's
// Retry-After later than the schedule sets the next attempt.
func TestFaultsFollowTheSchedule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, n int)
		status int64
	}{
		{"500", func(w http.ResponseWriter, _ *http.Request, _ int) { w.WriteHeader(http.StatusInternalServerError) }, 500},
		{"redirect", func(w http.ResponseWriter, r *http.Request, _ int) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, 302},
		{"slow", func(w http.ResponseWriter, r *http.Request, _ int) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, 0},
		{"reset", func(w http.ResponseWriter, _ *http.Request, _ int) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			rc := newReceiver(t, tc.answer)
			w.addWebhook("acme", rc.URL)
			w.notify(acmeVan)
			w.start(func(o *delivery.Options) { o.Client = client(300 * time.Millisecond) })
			eventually(t, "the delivery failed", func() bool { return w.states()[storage.DeliveryFailed] == 1 })
			if n := len(rc.requests()); n != 3 {
				t.Fatalf("%d requests, want 3", n)
			}
			if n := w.scalar(`SELECT count(*) FROM webhook_attempts WHERE COALESCE(status, 0) = ? AND (status IS NOT NULL OR error <> '')`, tc.status); n != 3 {
				t.Fatalf("%d attempts of status %d recorded, want 3", n, tc.status)
			}
			if n := w.scalar(`SELECT count(DISTINCT msg_id) FROM webhook_deliveries`); n != 1 {
				t.Fatal(n)
			}
			ids := map[string]bool{}
			for _, r := range rc.requests() {
				ids[r.id] = true
			}
			if len(ids) != 1 {
				t.Fatalf("webhook-ids %v: not stable across retries", ids)
			}
		})
	}
	t.Run("429 Retry-After", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		w.addWebhook("acme", rc.URL)
		w.notify(acmeVan)
		w.start(nil)
		eventually(t, "the first attempt", func() bool { return w.scalar(`SELECT count(*) FROM webhook_attempts`) == 1 })
		if wait := w.scalar(`SELECT (extract(epoch FROM next_at - updated_at) * 1000)::bigint FROM webhook_deliveries`); wait < 900 {
			t.Fatalf("next attempt %d ms later, want Retry-After's 1 s", wait)
		}
		eventually(t, "the delivery succeeded", func() bool { return w.states()[storage.DeliverySucceeded] == 1 })
	})
}

// TestSuccessAfterFailuresAndDisable: a success after failures clears the
// endpoint's failing_since; an endpoint failing for DisableAfter is
// disabled with the reason, and its pending deliveries wait for it.
func TestSuccessAfterFailuresAndDisable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var fail atomic.Bool
	fail.Store(true)
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	h := w.addWebhook("acme", rc.URL)
	w.notify(acmeVan)
	w.start(func(o *delivery.Options) {
		o.Schedule = []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
		o.DisableAfter = 2 * time.Second
	})
	eventually(t, "failing_since set", func() bool {
		return w.scalar(`SELECT count(*) FROM webhooks WHERE failing_since IS NOT NULL AND id = ?`, h.id) == 1
	})
	fail.Store(false)
	eventually(t, "the delivery succeeded", func() bool { return w.states()[storage.DeliverySucceeded] == 1 })
	if n := w.scalar(`SELECT count(*) FROM webhooks WHERE failing_since IS NULL AND active AND id = ?`, h.id); n != 1 {
		t.Fatal("failing_since not cleared by the success")
	}
	// failing for longer than DisableAfter (its first failure backdated):
	// disabled at the next failure
	fail.Store(true)
	w.exec(`UPDATE webhooks SET failing_since = now() - interval '1 hour' WHERE id = ?`, h.id)
	for range 5 {
		w.notify(acmeVan)
	}
	eventually(t, "the endpoint disabled", func() bool {
		return w.scalar(`SELECT count(*) FROM webhooks WHERE NOT active AND disabled_reason LIKE 'every delivery failed since %: status: 502' AND id = ?`, h.id) == 1
	})
	pending := w.states()[storage.DeliveryPending]
	if pending == 0 {
		t.Fatal("no delivery left pending by the disable")
	}
	before := len(rc.requests())
	time.Sleep(500 * time.Millisecond)
	if after := len(rc.requests()); after != before {
		t.Fatalf("%d requests to a disabled endpoint", after-before)
	}
	// re-activated: its pending deliveries go out
	fail.Store(false)
	w.exec(`UPDATE webhooks SET active = true, disabled_reason = NULL, failing_since = NULL WHERE id = ?`, h.id)
	eventually(t, "the pending deliveries sent", func() bool { return w.states()[storage.DeliveryPending] == 0 })
}

// TestOwnerLosesTheRightBeforeTheSend: a subaccount that lost
// event_notifications, or the grant of the device, between the enqueue
// and the send gets nothing: the delivery is skipped with the reason, no
// attempt recorded or counted. Its parent's webhook still gets it.
func TestOwnerLosesTheRightBeforeTheSend(t *testing.T) {
	t.Parallel()
	for _, lose := range []struct{ name, sql string }{
		{"privilege", `UPDATE accounts SET privileges = '{}' WHERE username = 'globex-day'`},
		{"grant", `DELETE FROM object_grants WHERE imei = '` + globexReefr + `'`},
		{"deactivated", `UPDATE accounts SET active = false WHERE username = 'globex-day'`},
	} {
		t.Run(lose.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			sub := newReceiver(t, nil)
			parent := newReceiver(t, nil)
			w.addWebhook("globex-day", sub.URL)
			w.addWebhook("globex", parent.URL)
			w.notify(globexReefr)
			if n := w.scalar(`SELECT count(*) FROM webhook_deliveries`); n != 2 {
				t.Fatalf("%d deliveries queued, want 2", n)
			}
			w.exec(lose.sql)
			w.start(nil)
			eventually(t, "the parent's delivery", func() bool { return len(parent.requests()) == 1 })
			eventually(t, "the subaccount's skipped", func() bool { return w.states()[storage.DeliverySkipped] == 1 })
			if n := len(sub.requests()); n != 0 {
				t.Fatalf("the subaccount received %d", n)
			}
			if n := w.scalar(`SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.state = 'skipped'`); n != 0 {
				t.Fatalf("%d attempts of a skipped delivery", n)
			}
			if n := w.scalar(`SELECT count(*) FROM webhook_deliveries WHERE state = 'skipped' AND last_error <> ''`); n != 1 {
				t.Fatal("no reason recorded")
			}
		})
	}
}

// TestStalledEndpointHoldsOnlyItsSlots: a receiver that never answers
// holds EndpointInflight workers at most; another endpoint's deliveries
// keep flowing meanwhile.
func TestStalledEndpointHoldsOnlyItsSlots(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var inflight, most atomic.Int64
	release := make(chan struct{})
	stalled := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	healthy := newReceiver(t, nil)
	// an endpoint that answered before (proven: its 2 slots), then stalls
	st := w.addWebhook("acme", stalled.URL)
	w.exec(`UPDATE webhooks SET proven_at = now() WHERE id = ?`, st.id)
	w.addWebhook("globex", healthy.URL)
	for range 10 {
		w.notify(acmeVan)
	}
	w.start(func(o *delivery.Options) {
		o.Workers, o.EndpointInflight = 6, 2
		o.Client = client(time.Minute)
	})
	eventually(t, "the stalled endpoint holding its slots", func() bool { return inflight.Load() == 2 })
	for range 20 {
		w.notify(globexReefr)
	}
	eventually(t, "every delivery to the healthy endpoint", func() bool { return len(healthy.requests()) == 20 })
	if inflight.Load() != 2 || most.Load() != 2 {
		t.Fatalf("%d requests in flight to the stalled endpoint (most %d), want 2", inflight.Load(), most.Load())
	}
	close(release)
}

// TestTwoSendersNeverSendOneDeliveryTwice: two senders (two sets of
// workers, each its own pool) on one database send every delivery, none
// twice, and never one delivery concurrently.
func TestTwoSendersNeverSendOneDeliveryTwice(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var mu sync.Mutex
	seen := map[string]int{}
	rc := newReceiver(t, func(rw http.ResponseWriter, r *http.Request, _ int) {
		mu.Lock()
		seen[r.Header.Get("webhook-id")]++
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		rw.WriteHeader(http.StatusOK)
	})
	other := newReceiver(t, nil)
	w.addWebhook("acme", rc.URL)
	w.addWebhook("fleetco", rc.URL)
	w.addWebhook("globex", other.URL)
	const n = 60
	for i := range n {
		if i%2 == 0 {
			w.notify(acmeVan)
		} else {
			w.notify(globexReefr)
		}
	}
	second := storage.NewStore(storage.Open(w.db.URL, storage.Options{MaxOpenConns: 8}))
	w.start(func(o *delivery.Options) { o.EndpointInflight = 4 })
	w.start(func(o *delivery.Options) { o.Store, o.EndpointInflight = second, 4 })
	// acme's and fleetco's of acme's notifications, fleetco's and
	// globex's of globex's
	eventually(t, "every delivery sent", func() bool { return w.states()[storage.DeliverySucceeded] == 2*n })
	mu.Lock()
	defer mu.Unlock()
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("%s sent %d times", id, k)
		}
	}
	if got := len(seen) + len(other.requests()); got != 2*n {
		t.Fatalf("%d distinct deliveries arrived, want %d", got, n*2)
	}
	if got := w.scalar(`SELECT count(*) FROM webhook_attempts`); got != 2*n {
		t.Fatalf("%d attempts, want %d", got, 2*n)
	}
}

// TestRetriesGetTheirShare: with one worker, 8 first attempts and 2
// retries due (the retries older), fresh deliveries go first but one claim
// in delivery.RetryShare takes a retry: the RetryShare-th request is a
// retry, and every delivery arrives once.
func TestRetriesGetTheirShare(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, nil)
	w.addWebhook("acme", rc.URL+"/hook")
	for range 10 {
		w.notify(acmeVan)
	}
	w.exec(`UPDATE webhook_deliveries SET attempts = 1, next_at = now() - interval '1 hour'
		WHERE id IN (SELECT id FROM webhook_deliveries ORDER BY id DESC LIMIT 2)`)
	var retries []string
	if err := w.db.NewRaw(`SELECT msg_id FROM webhook_deliveries WHERE attempts > 0`).Scan(context.Background(), &retries); err != nil {
		t.Fatal(err)
	}
	w.start(func(o *delivery.Options) { o.Workers = 1 })
	eventually(t, "ten requests", func() bool { return len(rc.requests()) == 10 })
	eventually(t, "ten deliveries succeeded", func() bool { return w.states()[storage.DeliverySucceeded] == 10 })
	got := rc.requests()
	seen := map[string]bool{}
	for i, r := range got {
		if seen[r.id] {
			t.Fatalf("request %d: %s sent twice", i+1, r.id)
		}
		seen[r.id] = true
		isRetry := slices.Contains(retries, r.id)
		if want := i+1 == delivery.RetryShare; isRetry != want {
			t.Fatalf("request %d is a retry: %v, want %v (requests in order %v, retries %v)", i+1, isRetry, want, ids(got), retries)
		}
		if i+1 == delivery.RetryShare {
			break
		}
	}
}

func ids(rs []received) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.id
	}
	return out
}
