package storage_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// The demo devices the delivery tests name.
const (
	deliveryTruck = "356938035643809" // acme's, granted to acme-night
	deliveryVan   = "356938035643817" // acme's, not granted
)

// addWebhook inserts an endpoint of the account username (plain SQL: the
// storage side of POST /webhooks is not what these tests are about; the
// sealed secret is opaque here) and returns its id.
func addWebhook(t *testing.T, db *storagetest.DB, username string, active bool, types ...string) int64 {
	t.Helper()
	if types == nil {
		types = []string{}
	}
	var id int64
	if err := db.NewRaw(`INSERT INTO webhooks (account_id, url, types, active, secret)
		SELECT id, 'https://example.com/' || username, ?::text[], ?, '\x01' FROM accounts WHERE username = ? RETURNING id`,
		pgdialect.Array(types), active, username).Scan(context.Background(), &id); err != nil {
		t.Fatalf("webhook of %s: %v", username, err)
	}
	return id
}

// deliveriesOf returns the ids of the webhooks that have a delivery of
// the notification id, sorted.
func deliveriesOf(t *testing.T, db *storagetest.DB, id int64) []int64 {
	t.Helper()
	out := []int64{}
	if err := db.NewRaw(`SELECT webhook_id FROM webhook_deliveries WHERE notification_id = ? ORDER BY webhook_id`, id).
		Scan(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEnqueueDeliveriesToWhoCouldList: a notification queues one delivery
// per active webhook, of a matching type, owned by an account that could
// list it (its account, the accounts above, its subaccounts), in the
// notification's statement; no other.
func TestEnqueueDeliveriesToWhoCouldList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	acme := addWebhook(t, db, "acme", true)
	acmeTyped := addWebhook(t, db, "acme", true, "overspeed")
	addWebhook(t, db, "acme", true, "sos")
	addWebhook(t, db, "acme", false)
	night := addWebhook(t, db, "acme-night", true)
	fleetco := addWebhook(t, db, "fleetco", true)
	admin := addWebhook(t, db, "admin", true)
	addWebhook(t, db, "globex", true)
	addWebhook(t, db, "globex-day", true)
	addWebhook(t, db, "northwind", true)

	id, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed")
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{acme, acmeTyped, night, fleetco, admin}
	slices.Sort(want)
	if got := deliveriesOf(t, db, id); !slices.Equal(got, want) {
		t.Fatalf("deliveries to webhooks %v, want %v", got, want)
	}
	var owners, types []string
	if err := db.NewRaw(`SELECT a.username FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN accounts a ON a.id = d.account_id
		WHERE d.notification_id = ? AND w.account_id = d.account_id ORDER BY d.id`, id).Scan(ctx, &owners); err != nil {
		t.Fatal(err)
	}
	if len(owners) != len(want) {
		t.Fatalf("a delivery's account is not its webhook's owner: %v", owners)
	}
	if err := db.NewRaw(`SELECT DISTINCT type FROM webhook_deliveries WHERE notification_id = ?`, id).Scan(ctx, &types); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(types, []string{storage.DeliveryNotificationType}) {
		t.Fatalf("types %v", types)
	}
}

// TestEnqueueWithoutWebhooksInsertsNone: with no webhook the statement
// inserts the notification and nothing else.
func TestEnqueueWithoutWebhooksInsertsNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	id, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed")
	if err != nil || id == 0 {
		t.Fatalf("id %d, %v", id, err)
	}
	if got := deliveriesOf(t, db, id); len(got) != 0 {
		t.Fatalf("deliveries %v", got)
	}
}

// lockedBy reports whether the delivery id's row is locked by another
// transaction (a probe that does not wait).
func rowLocked(t *testing.T, db *storagetest.DB, id int64) bool {
	t.Helper()
	var got []int64
	if err := db.NewRaw(`SELECT id FROM webhook_deliveries WHERE id = ? FOR UPDATE SKIP LOCKED`, id).Scan(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	return len(got) == 0
}

// advisoryLocks is the number of advisory locks granted now.
func advisoryLocks(t *testing.T, db *storagetest.DB) int {
	t.Helper()
	var n int
	if err := db.NewRaw(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).
		Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClaimGivesUpAFullEndpointUnlocked: with one slot per endpoint, a
// second claim passes the held endpoint's next delivery and takes another
// endpoint's; the row it gave up (its savepoint rolled back) is neither
// locked nor holding an advisory lock, and is claimed once the first
// claim ends. First attempts come before due retries.
func TestClaimGivesUpAFullEndpointUnlocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	a := addWebhook(t, db, "acme", true)
	first, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed")
	if err != nil {
		t.Fatal(err)
	}
	second, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed")
	if err != nil {
		t.Fatal(err)
	}
	b := addWebhook(t, db, "globex", true)
	third, err := store.InsertNotificationOf(ctx, "861073032104551", "overspeed")
	if err != nil {
		t.Fatal(err)
	}
	// a due retry of a's, older than everything: after the first attempts
	if _, err := db.ExecContext(ctx, `UPDATE webhook_deliveries SET attempts = 1, next_at = now() - interval '1 hour' WHERE notification_id = ?`, second); err != nil {
		t.Fatal(err)
	}

	c1, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 1})
	if err != nil || c1 == nil {
		t.Fatalf("claim: %v %v", c1, err)
	}
	defer c1.Release()
	if c1.WebhookID != a || *c1.NotificationID != first {
		t.Fatalf("first claim: webhook %d notification %d, want %d %d", c1.WebhookID, *c1.NotificationID, a, first)
	}
	c2, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 1})
	if err != nil || c2 == nil {
		t.Fatalf("claim: %v %v", c2, err)
	}
	defer c2.Release()
	if c2.WebhookID != b || *c2.NotificationID != third {
		t.Fatalf("second claim: webhook %d notification %d, want %d %d", c2.WebhookID, *c2.NotificationID, b, third)
	}
	var passed int64
	if err := db.NewRaw(`SELECT id FROM webhook_deliveries WHERE notification_id = ?`, second).Scan(ctx, &passed); err != nil {
		t.Fatal(err)
	}
	if rowLocked(t, db, passed) {
		t.Fatal("the delivery given up is still locked")
	}
	if n := advisoryLocks(t, db); n != 2 {
		t.Fatalf("%d advisory locks held, want 2 (one slot per claim)", n)
	}
	if c3, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 1}); err != nil || c3 != nil {
		t.Fatalf("a third claim with every endpoint full: %v %v", c3, err)
	}
	if n := advisoryLocks(t, db); n != 2 {
		t.Fatalf("%d advisory locks held after a claim found nothing, want 2", n)
	}
	if _, err := c1.Record(ctx, storage.Attempt{OK: true, Status: 200}, storage.Retry{}); err != nil {
		t.Fatal(err)
	}
	c4, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 1})
	if err != nil || c4 == nil || c4.ID != passed {
		t.Fatalf("after the first claim ended: %+v %v, want delivery %d", c4, err, passed)
	}
	c4.Release()
	c2.Release()
	// two slots: a's two pending deliveries and b's at once
	if _, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed"); err != nil {
		t.Fatal(err)
	}
	ofA := 0
	for range 3 {
		c, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 2})
		if err != nil || c == nil {
			t.Fatalf("two slots: %v %v", c, err)
		}
		defer c.Release()
		if c.WebhookID == a {
			ofA++
		}
	}
	if ofA != 2 {
		t.Fatalf("%d of a's deliveries claimed at once, want 2", ofA)
	}
}

// TestRecordScheduleFailingSinceAndDisable: failures follow the schedule
// to failed; the endpoint's failing_since is set at the first failure and
// cleared by a success; a failure past DisableAfter disables it with the
// reason; every attempt is counted in the owner's usage; Retry-After
// later than the schedule wins (bounded).
func TestRecordScheduleFailingSinceAndDisable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	wh := addWebhook(t, db, "acme", true)
	retry := storage.Retry{Schedule: []time.Duration{time.Millisecond, time.Millisecond}, DisableAfter: time.Hour, MaxRetryAfter: time.Minute}
	if _, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed"); err != nil {
		t.Fatal(err)
	}
	claim := func() *storage.Claim {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			c, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 1})
			if err != nil {
				t.Fatal(err)
			}
			if c != nil {
				return c
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("nothing due")
		return nil
	}
	failingSince := func() *time.Time {
		var ts *time.Time
		if err := db.NewRaw(`SELECT failing_since FROM webhooks WHERE id = ?`, wh).Scan(ctx, &ts); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	c := claim()
	r, err := c.Record(ctx, storage.Attempt{Status: 500, Error: "status 500"}, retry)
	if err != nil || r.State != storage.DeliveryPending {
		t.Fatalf("%+v %v", r, err)
	}
	since := failingSince()
	if since == nil {
		t.Fatal("failing_since not set")
	}
	c = claim()
	r, err = c.Record(ctx, storage.Attempt{Status: 429, RetryAfter: time.Hour}, retry)
	if err != nil || r.State != storage.DeliveryPending || r.NextAt.Sub(c.Now) < 59*time.Second {
		t.Fatalf("Retry-After: %+v %v", r, err)
	}
	if got := failingSince(); got == nil || !got.Equal(*since) {
		t.Fatalf("failing_since moved: %v, was %v", got, since)
	}
	if _, err := db.ExecContext(ctx, `UPDATE webhook_deliveries SET next_at = now()`); err != nil {
		t.Fatal(err)
	}
	c = claim()
	r, err = c.Record(ctx, storage.Attempt{Error: "connection reset"}, retry)
	if err != nil || r.State != storage.DeliveryFailed {
		t.Fatalf("after the schedule: %+v %v", r, err)
	}
	var attempts, counted int64
	if err := db.NewRaw(`SELECT count(*) FROM webhook_attempts`).Scan(ctx, &attempts); err != nil {
		t.Fatal(err)
	}
	if err := db.NewRaw(`SELECT COALESCE(sum(deliveries_attempted), 0) FROM usage_daily u JOIN accounts a ON a.id = u.account_id WHERE a.username = 'acme'`).
		Scan(ctx, &counted); err != nil {
		t.Fatal(err)
	}
	if attempts != 3 || counted != 3 {
		t.Fatalf("%d attempts recorded, %d counted, want 3", attempts, counted)
	}

	// a success clears failing_since
	if _, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed"); err != nil {
		t.Fatal(err)
	}
	c = claim()
	if r, err := c.Record(ctx, storage.Attempt{OK: true, Status: 204}, retry); err != nil || r.State != storage.DeliverySucceeded {
		t.Fatalf("%+v %v", r, err)
	}
	if got := failingSince(); got != nil {
		t.Fatalf("failing_since %v after a success", got)
	}

	// failing for longer than DisableAfter: disabled, with the reason
	if _, err := db.ExecContext(ctx, `UPDATE webhooks SET failing_since = now() - interval '2 hours' WHERE id = ?`, wh); err != nil {
		t.Fatal(err)
	}
	if _, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed"); err != nil {
		t.Fatal(err)
	}
	c = claim()
	r, err = c.Record(ctx, storage.Attempt{Status: 503, Error: "status 503"}, retry)
	if err != nil || !r.Disabled {
		t.Fatalf("not disabled: %+v %v", r, err)
	}
	var active bool
	var reason string
	if err := db.NewRaw(`SELECT active, disabled_reason FROM webhooks WHERE id = ?`, wh).Scan(ctx, &active, &reason); err != nil {
		t.Fatal(err)
	}
	if active || !strings.HasPrefix(reason, "every delivery failed since ") || !strings.HasSuffix(reason, ": status 503") {
		t.Fatalf("active %v, reason %q", active, reason)
	}
	// a disabled endpoint's pending deliveries stay pending, unclaimed
	if c, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 1}); err != nil || c != nil {
		t.Fatalf("claimed a disabled endpoint's delivery: %v %v", c, err)
	}
}

// TestEraseWaitsForAClaim: an erase of the owner's account waits for a
// claim in flight (its row lock) and deletes the delivery after it ends;
// nothing of the account is claimable after the erase returns.
func TestEraseWaitsForAClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	addWebhook(t, db, "acme", true)
	if _, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed"); err != nil {
		t.Fatal(err)
	}
	c, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 2})
	if err != nil || c == nil {
		t.Fatal(c, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := store.EraseAccount(ctx, "acme", false)
		done <- err
	}()
	// the erase waits on the claimed row's lock
	waitFor(t, "the erase to wait on the claimed row", func() bool {
		var n int
		_ = db.NewRaw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%webhook_deliveries%'`).Scan(ctx, &n)
		return n > 0
	})
	select {
	case err := <-done:
		t.Fatalf("the erase returned while a send was in flight: %v", err)
	default:
	}
	if _, err := c.Record(ctx, storage.Attempt{OK: true, Status: 200}, storage.Retry{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.NewRaw(`SELECT count(*) FROM webhook_deliveries`).Scan(ctx, &n); err != nil || n != 0 {
		t.Fatalf("%d deliveries after the erase (%v)", n, err)
	}
}

// TestClaimReadsTheIndexInOrder: with a large queue (50,000 due
// deliveries, first attempts and retries, of ten endpoints) the claim's
// plan is a scan of webhook_deliveries_due_idx in the claim's order,
// without a Sort node (a claim reads the first due rows, never sorts the
// queue), with and without endpoints excluded and healthy-only.
func TestClaimReadsTheIndexInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	importJSON(t, db, demodata.File())
	for range 10 {
		addWebhook(t, db, "acme", true)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO webhook_deliveries (webhook_id, account_id, type, attempts, next_at)
		SELECT w.id, w.account_id, 'webhook.test', g % 3, now() - g * interval '1 second'
		FROM generate_series(1, 5000) AS g CROSS JOIN webhooks AS w`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `ANALYZE webhook_deliveries; ANALYZE webhooks`); err != nil {
		t.Fatal(err)
	}
	var some int64
	if err := db.NewRaw(`SELECT min(id) FROM webhooks`).Scan(ctx, &some); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]any{{pgdialect.Array([]int64{}), false, false, false, 2}, {pgdialect.Array([]int64{some, some + 1}), false, true, true, 2}, {pgdialect.Array([]int64{}), true, false, false, 2}} {
		var plan []string
		if err := db.NewRaw("EXPLAIN "+storage.ClaimSQL, args...).Scan(ctx, &plan); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Sort") || !strings.Contains(text, "Index Scan using webhook_deliveries_due_idx") {
			t.Fatalf("the claim's plan sorts or does not read webhook_deliveries_due_idx in order:\n%s", text)
		}
	}
}

// TestClaimRetriesTakesAnOlderRetryFirst: a claim with Retries takes a due
// retry although first attempts are due (the retries' share of the
// sender), and nothing when no retry is due; without it the first attempt
// comes first. The attempt then recorded commits, counts the owner's usage
// once and leaves no transaction open.
func TestClaimRetriesTakesAnOlderRetryFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, db := newStore(t)
	importJSON(t, db, demodata.File())
	addWebhook(t, db, "acme", true)
	// proven (it answered before): two slots, for the two claims below
	if _, err := db.ExecContext(ctx, `UPDATE webhooks SET proven_at = now()`); err != nil {
		t.Fatal(err)
	}
	first, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 2, Retries: true}); err != nil || c != nil {
		t.Fatalf("a retries claim with no retry due: %+v %v", c, err)
	}
	retry, err := store.InsertNotificationOf(ctx, deliveryVan, "overspeed")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE webhook_deliveries SET attempts = 1, next_at = now() - interval '1 second' WHERE notification_id = ?`, retry); err != nil {
		t.Fatal(err)
	}
	c, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 2, Retries: true})
	if err != nil || c == nil || *c.NotificationID != retry {
		t.Fatalf("a retries claim: %+v %v, want notification %d's", c, err, retry)
	}
	c2, err := store.ClaimDelivery(ctx, storage.ClaimOptions{EndpointSlots: 2})
	if err != nil || c2 == nil || *c2.NotificationID != first {
		t.Fatalf("a claim: %+v %v, want notification %d's", c2, err, first)
	}
	c2.Release()
	if _, err := c.Record(ctx, storage.Attempt{OK: true, Status: 204}, storage.Retry{}); err != nil {
		t.Fatal(err)
	}
	var state string
	var n int64
	if err := db.NewRaw(`SELECT d.state, (SELECT sum(deliveries_attempted) FROM usage_daily) FROM webhook_deliveries AS d WHERE d.notification_id = ?`, retry).
		Scan(ctx, &state, &n); err != nil {
		t.Fatal(err)
	}
	if state != storage.DeliverySucceeded || n != 1 {
		t.Fatalf("after the record: state %s, %d attempts counted, want succeeded and 1", state, n)
	}
	if n := advisoryLocks(t, db); n != 0 {
		t.Fatalf("%d advisory locks held after the record, want 0", n)
	}
}
