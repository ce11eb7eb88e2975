package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/pgserver"
	"github.com/fleetapi/fleetapi/webhook"
)

// slowReceiver is the webhook endpoint of TestFailoverWebhooks: it takes
// 50 to 200 ms to answer 200 (so that sends are in flight when the
// primary dies), and keeps every request it got with whether its
// signature verified.
type slowReceiver struct {
	secret   []byte
	inflight atomic.Int64
	n        atomic.Int64

	mu   sync.Mutex
	got  []received
	seen map[int64]bool // notification ids received
}

// received is one request the receiver got.
type received struct {
	msgID          string
	notificationID int64
	typ            string
	valid          bool
	at             time.Time
}

func (rc *slowReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.inflight.Add(1)
	defer rc.inflight.Add(-1)
	k := rc.n.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		return
	}
	id := r.Header.Get("webhook-id")
	unix, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	rc.mu.Lock()
	secret := rc.secret
	rc.mu.Unlock()
	valid := id != "" && unix != 0 && r.Header.Get("webhook-signature") == webhook.Sign(id, time.Unix(unix, 0), body, secret)
	var b struct {
		Type string `json:"type"`
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &b)
	rc.mu.Lock()
	rc.got = append(rc.got, received{msgID: id, notificationID: b.Data.ID, typ: b.Type, valid: valid, at: time.Now()})
	rc.seen[b.Data.ID] = true
	rc.mu.Unlock()
	// 50..200 ms, spread over the requests
	select {
	case <-time.After(time.Duration(50+(k*37)%151) * time.Millisecond):
	case <-r.Context().Done():
		return
	}
	w.WriteHeader(http.StatusOK)
}

// requests is a copy of what the receiver got.
func (rc *slowReceiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// TestFailoverWebhooks extends TestFailoverIngest (issue 37, item 2:
// "at least once across a primary failover") to webhook deliveries. Two
// `fleetapi serve` (each with its sender; ingestion through the first) run
// on the Patroni cluster of a primary and a synchronous standby; acme's
// webhook for overspeed notifications points at a local receiver that
// answers in 50-200 ms. Gateways post readings that fire an overspeed rule
// (each notification queues its delivery in its own transaction) while
// the primary node is killed with SIGKILL as sends are in flight; the
// standby is promoted and the servers reconnect through HAProxy. Then, on
// the new primary: every batch answered 200 is stored with its
// notifications (verifyIngest); every overspeed notification committed,
// before or after the failover, has one delivery, which drains to
// succeeded (none left pending) and reached the receiver at least once;
// every request received verifies with the webhook's secret, and a
// notification received more than once carried the same webhook-id (its
// delivery's msg_id) every time. It logs the duplicates and the time the
// queue took to drain after the promotion, for docs/webhooks.md.
func TestFailoverWebhooks(t *testing.T) {
	ctx := context.Background()
	c := startHA(t, pgserver.HAOptions{})
	db := storage.Open(c.URL, storage.Options{MaxOpenConns: 2})
	t.Cleanup(func() { db.Close() })
	var imeis []string
	if err := db.NewRaw(`SELECT o.imei FROM objects o JOIN accounts a ON a.id = o.account_id
		WHERE a.username = 'acme' AND o.imei <> '' ORDER BY o.imei LIMIT 3`).Scan(ctx, &imeis); err != nil {
		t.Fatal(err)
	}
	if len(imeis) < 3 {
		t.Fatalf("acme has %d devices, want 3", len(imeis))
	}
	var ruleID int64
	if err := db.NewRaw(`INSERT INTO events (account_id, name, type, active, checked_value, imei)
		SELECT id, 'e2e failover webhooks', 'overspeed', true, '100', ARRAY[?, ?]::text[] FROM accounts WHERE username = 'acme' RETURNING event_id`,
		imeis[0], imeis[1]).Scan(ctx, &ruleID); err != nil {
		t.Fatal(err)
	}
	gws := make([]*gateway, len(imeis))
	for i, imei := range imeis {
		gws[i] = &gateway{imei: imei, fires: i < 2}
	}

	rc := &slowReceiver{seen: map[int64]bool{}}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	key := make([]byte, webhook.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	env := []string{"FLEET_DATABASE_READ_URLS=" + c.ReplicaURL, "FLEET_DB_MAX_CONNS=8", "FLEET_RATE_LIMIT=1000000",
		"FLEET_WEBHOOK_KEY=" + base64.StdEncoding.EncodeToString(key), "FLEET_WEBHOOK_ALLOW_HTTP=true", "FLEET_WEBHOOK_ALLOW_NETS=127.0.0.0/8",
		"FLEET_WEBHOOK_WORKERS=4", "FLEET_WEBHOOK_ENDPOINT_INFLIGHT=8", "FLEET_WEBHOOK_RETRIES=1s,1s,1s,1s,1s,1s,1s,1s,1s,1s"}
	base := serve(t, c.URL, env...)
	serve(t, c.URL, env...) // a second replica: its sender claims too

	status, _, b := apiJSON(t, base, "POST", "/webhooks", map[string]any{
		"url": srv.URL, "description": "failover", "types": []string{"overspeed"}, "active": true})
	if status != http.StatusCreated {
		t.Fatalf("POST /webhooks: %d %s", status, b)
	}
	var created struct {
		Data struct {
			ID     int64  `json:"id"`
			Secret string `json:"secret"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &created); err != nil {
		t.Fatalf("POST /webhooks answer: %v %s", err, b)
	}
	secret, err := webhook.ParseSecret(created.Data.Secret)
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = secret
	rc.mu.Unlock()
	hook := created.Data.ID
	var before int64
	if err := db.NewRaw(`SELECT coalesce(max(id), 0) FROM notifications`).Scan(ctx, &before); err != nil {
		t.Fatal(err)
	}

	tok := token(t, "acme-all")
	start := time.Now().UTC().Add(-12 * time.Hour).Truncate(time.Second)
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	var inflightAtKill int64
	var receivedAtKill int
	var killedAt time.Time
	o := runIngestFailover(t, base, tok, start, gws, func() error {
		// kill the primary while the receiver holds requests
		deadline := time.Now().Add(30 * time.Second)
		for rc.inflight.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		inflightAtKill = rc.inflight.Load()
		receivedAtKill = len(rc.requests())
		killedAt = time.Now()
		return c.Kill(leader)
	})
	if inflightAtKill == 0 {
		t.Fatalf("no delivery was in flight when the primary was killed (%d received before)", receivedAtKill)
	}
	if o.firstAckAfter.IsZero() {
		t.Fatal("no batch answered 200 after the primary was killed")
	}
	if o.s500 > 0 || o.otherErr > 0 || o.noRetryAfter > 0 {
		t.Errorf("answers other than 200/503 while failing over: %d 500s, %v; 503 without Retry-After: %d", o.s500, o.other, o.noRetryAfter)
	}
	f := verifyIngest(t, db, "after the failover", ruleID, start, gws)

	// the queue drains on the new primary
	var pending, other int
	deadline := time.Now().Add(180 * time.Second)
	for {
		queryRetry(t, func() error {
			return db.NewRaw(`SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state NOT IN ('pending', 'succeeded'))
				FROM webhook_deliveries WHERE webhook_id = ?`, hook).Scan(ctx, &pending, &other)
		})
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries still pending 180 s after the failover", pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
	drained := time.Now()
	if other > 0 {
		t.Errorf("%d deliveries neither pending nor succeeded (failed or skipped)", other)
	}

	// every overspeed notification committed has one delivery, succeeded
	// and received with its msg_id and its notification
	type row struct {
		Notification int64   `bun:"id"`
		MsgID        *string `bun:"msg_id"`
		State        *string `bun:"state"`
		Deliveries   int     `bun:"deliveries"`
		Attempts     int     `bun:"attempts"`
	}
	var rows []row
	queryRetry(t, func() error {
		rows = rows[:0]
		return db.NewRaw(`SELECT n.id, min(d.msg_id) AS msg_id, min(d.state) AS state, count(d.id) AS deliveries, coalesce(sum(d.attempts), 0) AS attempts
			FROM notifications n LEFT JOIN webhook_deliveries d ON d.notification_id = n.id AND d.webhook_id = ?
			WHERE n.id > ? AND n.type = 'overspeed' GROUP BY n.id ORDER BY n.id`, hook, before).Scan(ctx, &rows)
	})
	reqs := rc.requests()
	byMsg := map[string][]received{}
	idsOf := map[int64]map[string]bool{}
	invalid := 0
	for _, r := range reqs {
		if !r.valid {
			invalid++
		}
		byMsg[r.msgID] = append(byMsg[r.msgID], r)
		if idsOf[r.notificationID] == nil {
			idsOf[r.notificationID] = map[string]bool{}
		}
		idsOf[r.notificationID][r.msgID] = true
	}
	if invalid > 0 {
		t.Errorf("%d of %d requests received have a signature that does not verify", invalid, len(reqs))
	}
	attempts := 0
	for _, r := range rows {
		attempts += r.Attempts
		switch {
		case r.Deliveries != 1 || r.MsgID == nil:
			t.Errorf("notification %d has %d deliveries to the webhook, want 1 (queued in its transaction)", r.Notification, r.Deliveries)
		case *r.State != storage.DeliverySucceeded:
			t.Errorf("notification %d: delivery %s is %s, want succeeded", r.Notification, *r.MsgID, *r.State)
		case len(byMsg[*r.MsgID]) == 0:
			t.Errorf("notification %d: its delivery %s is succeeded but the receiver never got it", r.Notification, *r.MsgID)
		}
		if r.MsgID != nil {
			for _, got := range byMsg[*r.MsgID] {
				if got.notificationID != r.Notification {
					t.Errorf("webhook-id %s (notification %d) came with notification %d", *r.MsgID, r.Notification, got.notificationID)
				}
			}
		}
	}
	// the senders' pause: the longest time without a request after the
	// kill (the sends in flight at the kill end it; then nothing can be
	// claimed until the promotion), and when it ended
	var resumed time.Time
	var pause time.Duration
	for i := 1; i < len(reqs); i++ {
		if gap := reqs[i].at.Sub(reqs[i-1].at); reqs[i].at.After(killedAt) && gap > pause {
			pause, resumed = gap, reqs[i].at
		}
	}
	duplicates, twice := 0, 0
	for n, ids := range idsOf {
		if len(ids) != 1 {
			t.Errorf("notification %d came with %d webhook-ids, want the same on every request: %v", n, len(ids), ids)
		}
	}
	for _, got := range byMsg {
		if len(got) > 1 {
			twice++
			duplicates += len(got) - 1
		}
	}
	if len(rows) < f.notes {
		t.Errorf("%d overspeed notifications on the new primary, fewer than the rule's %d", len(rows), f.notes)
	}
	if len(rows) == 0 || t.Failed() {
		t.Fatalf("%d notifications, %d requests received", len(rows), len(reqs))
	}
	t.Logf("webhooks through a failover: %d notifications committed (%d of the rule), %d requests received (%d at the kill, %d in flight), %d duplicates of %d deliveries collapsed by webhook-id, %d attempts recorded; first write answered %.1f s after the kill, deliveries paused %.1f s until %.1f s after it; queue empty %.1f s after that first write",
		len(rows), f.notes, len(reqs), receivedAtKill, inflightAtKill, duplicates, twice, attempts,
		o.firstAckAfter.Sub(killedAt).Seconds(), pause.Seconds(), resumed.Sub(killedAt).Seconds(), drained.Sub(o.firstAckAfter).Seconds())
	fmt.Fprintf(os.Stderr, "FAILOVER-WEBHOOKS notifications=%d requests=%d inflight_at_kill=%d duplicates=%d duplicated_deliveries=%d attempts=%d first_write_s=%.1f pause_s=%.1f resumed_s=%.1f drain_after_first_write_s=%.1f\n",
		len(rows), len(reqs), inflightAtKill, duplicates, twice, attempts,
		o.firstAckAfter.Sub(killedAt).Seconds(), pause.Seconds(), resumed.Sub(killedAt).Seconds(), drained.Sub(o.firstAckAfter).Seconds())
}
