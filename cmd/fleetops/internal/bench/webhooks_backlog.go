package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/procfs"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// backlogMessage marks the notifications the backlog mode inserts (and
// deletes).
const backlogMessage = "fleetops bench webhooks backlog"

// whBacklog is the backlog mode: with the receiver down, --webhook-backlog
// deliveries are queued to --webhook-endpoints endpoints in one
// statement: notifications of the driven devices (their rules' type and
// event) and, per notification and endpoint, a delivery due now whose
// first attempt failed (attempts 1, connection refused) — the state a
// sender leaves a backlog in while the receiver refuses; building 100,000
// through the API at the drive's rate would take hours. The receiver comes
// up, fresh notifications are driven at --webhook-rate, and the run ends
// when no backlog delivery is pending (or after --webhook-drain-timeout).
func (h *harness) whBacklog(ctx context.Context, token string, recv *receiver, devs []*whDevice) (res whResult, err error) {
	n := h.cfg.WebhookEndpoints
	res = whResult{name: "backlog", endpoints: n, rate: h.cfg.WebhookRate, load: procfs.ReadLoadAverage().OneMinute()}
	set, err := h.createEndpoints(ctx, token, recv, n)
	defer func() {
		if derr := h.deleteEndpoints(context.WithoutCancel(ctx), token, set); derr != nil && err == nil {
			err = derr
		}
		if _, derr := h.db.NewRaw("DELETE FROM notifications WHERE message = ?", backlogMessage).Exec(context.WithoutCancel(ctx)); derr != nil && err == nil {
			err = fmt.Errorf("webhooks: removing the backlog: %w", derr)
		}
	}()
	if err != nil {
		return res, err
	}
	recv.reset(set.secrets, nil)
	recv.down()
	t0 := time.Now()
	if res.backlog, err = h.queueBacklog(ctx, devs, set.ids, h.cfg.WebhookBacklog); err != nil {
		return res, err
	}
	var maxBacklog int64
	if err := h.db.NewRaw("SELECT coalesce(max(id), 0) FROM notifications WHERE message = ?", backlogMessage).Scan(ctx, &maxBacklog); err != nil {
		return res, err
	}
	fmt.Fprintf(h.out, "backlog: %d deliveries to %d endpoints queued in %s s, receiver down\n", res.backlog, n, stats.Seconds(time.Since(t0)))
	if err := recv.up(); err != nil {
		return res, err
	}
	cpu := startCPU(h.cfg.ServerPID)
	start := time.Now()
	stop := make(chan struct{})
	driven := make(chan driveResult, 1)
	go func() { driven <- h.drive(ctx, token, devs, h.cfg.WebhookRate, stop) }()
	deadline := start.Add(h.cfg.WebhookDrainTimeout)
	for ctx.Err() == nil {
		var left int64
		if err := h.db.NewRaw(`SELECT count(*) FROM webhook_deliveries d JOIN notifications n ON n.id = d.notification_id
WHERE d.webhook_id = ANY(?) AND d.state = 'pending' AND n.message = ?`, pgdialect.Array(set.ids), backlogMessage).Scan(ctx, &left); err != nil {
			close(stop)
			<-driven
			return res, err
		}
		if left == 0 {
			res.drained = true
			break
		}
		if time.Now().After(deadline) {
			res.left = left
			res.note = fmt.Sprintf("%d backlog deliveries still pending after %s", left, h.cfg.WebhookDrainTimeout)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	res.drain = time.Since(start)
	close(stop)
	res.drive = <-driven
	before := maxBacklog
	var fresh whResult
	tally(&fresh, recv.snapshot(), before, start)
	tally(&res, recv.snapshot(), before, start)
	res.latency = fresh.latency
	res.notifications, _ = h.benchNotificationsSince(ctx, maxBacklog)
	if h.cfg.ServerPID != 0 && res.delivered > 0 {
		res.serverCPU = cpu.perRequest(res.delivered)
	}
	return res, nil
}

// queueBacklog inserts, in one statement, ceil(total / len(webhooks))
// notifications of devs (their accounts' bench rules, devices in turn) and
// total deliveries of them to webhooks, each due now after one refused
// attempt. It returns the deliveries inserted.
func (h *harness) queueBacklog(ctx context.Context, devs []*whDevice, webhooks []int64, total int) (int64, error) {
	ids := make([]int64, len(devs))
	for i, d := range devs {
		ids[i] = d.ID
	}
	q := `WITH d AS (
  SELECT o.id, o.imei, o.account_id, e.event_id, row_number() OVER (ORDER BY o.id) - 1 AS k, count(*) OVER () AS c
  FROM objects o JOIN events e ON e.account_id = o.account_id AND e.name = ? WHERE o.id = ANY(?)
), n AS (
  INSERT INTO notifications (account_id, event_id, type, imei, object_id, time, value, message)
  SELECT d.account_id, d.event_id, 'overspeed', d.imei, d.id, now() - make_interval(secs => g), '60', ?
  FROM generate_series(0, ? - 1) g JOIN d ON d.k = g % d.c
  RETURNING id, account_id
)
INSERT INTO webhook_deliveries (webhook_id, account_id, notification_id, type, attempts, next_at, last_error)
SELECT w.id, w.account_id, n.id, 'notification.created', 1, now(), 'connect: connection refused'
FROM n CROSS JOIN webhooks w WHERE w.id = ANY(?)
ORDER BY n.id, w.id
LIMIT ?`
	notifications := (total + len(webhooks) - 1) / len(webhooks)
	r, err := h.db.NewRaw(q, benchRuleName, pgdialect.Array(ids), backlogMessage, notifications, pgdialect.Array(webhooks), total).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("webhooks: queueing the backlog: %w", err)
	}
	return r.RowsAffected()
}
