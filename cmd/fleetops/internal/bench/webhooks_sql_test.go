package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestWebhooksSQL: what the webhooks workload writes with SQL, on the
// demo data: the devices of a manager's tree, one bench rule per account
// of them, the backlog (ceil(total/webhooks) notifications of those
// devices with the rules' event ids, exactly total deliveries, each a
// retry due now), the count of the rules' notifications, and the cleanup
// (rules and backlog gone, the deliveries with their notifications).
func TestWebhooksSQL(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatal(err)
	}
	h := &harness{db: db.DB}
	var manager int64
	if err := db.NewRaw(`SELECT a.manager_id FROM objects o JOIN accounts a ON a.id = o.account_id
WHERE a.manager_id IS NOT NULL ORDER BY o.id LIMIT 1`).Scan(ctx, &manager); err != nil {
		t.Fatal(err)
	}
	devs, err := h.whDevices(ctx, manager, 3)
	if err != nil || len(devs) == 0 {
		t.Fatalf("devices of manager %d: %v, %v", manager, devs, err)
	}
	rules, err := h.insertRules(ctx, devs)
	if err != nil {
		t.Fatal(err)
	}
	var webhooks []int64
	for range 3 {
		var id int64
		if err := db.NewRaw(`INSERT INTO webhooks (account_id, url, secret) VALUES (?, 'https://example.com/hook', '\x00') RETURNING id`, manager).Scan(ctx, &id); err != nil {
			t.Fatal(err)
		}
		webhooks = append(webhooks, id)
	}
	n, err := h.queueBacklog(ctx, devs, webhooks, 1000)
	if err != nil || n != 1000 {
		t.Fatalf("queued %d deliveries (%v), want 1000", n, err)
	}
	var got struct {
		Notifications int64 `bun:"notifications"`
		Retries       int64 `bun:"retries"`
		Devices       int64 `bun:"devices"`
	}
	if err := db.NewRaw(`SELECT (SELECT count(*) FROM notifications WHERE message = ?) AS notifications,
  (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND attempts = 1 AND next_at <= now() AND type = 'notification.created') AS retries,
  (SELECT count(DISTINCT imei) FROM notifications WHERE message = ?) AS devices`, backlogMessage, backlogMessage).Scan(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if got.Notifications != 334 || got.Retries != 1000 || got.Devices != int64(len(devs)) {
		t.Fatalf("backlog: %+v, want 334 notifications of %d devices and 1000 retries due", got, len(devs))
	}
	if c, err := h.benchNotificationsSince(ctx, 0); err != nil || c != 334 {
		t.Fatalf("the rules' notifications: %d (%v), want 334", c, err)
	}
	if _, err := db.NewRaw("DELETE FROM notifications WHERE message = ?", backlogMessage).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.deleteRules(ctx, rules); err != nil {
		t.Fatal(err)
	}
	var left int64
	if err := db.NewRaw(`SELECT (SELECT count(*) FROM webhook_deliveries) + (SELECT count(*) FROM events WHERE name = ?)`, benchRuleName).Scan(ctx, &left); err != nil || left != 0 {
		t.Fatalf("%d deliveries and rules left (%v)", left, err)
	}
}
