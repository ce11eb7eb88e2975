package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
)

// WebhookDelivery is a row of webhook_deliveries as the API shows it: one
// message to one webhook and, in AttemptsLog, its last attempts
// (docs/design.md §14: each attempt's time, status, duration and error).
// Its state machine is the migration's (20270401000001): pending (due at
// next_at), succeeded, failed, skipped.
type WebhookDelivery struct {
	bun.BaseModel `bun:"table:webhook_deliveries,alias:wd"`

	ID             int64     `bun:"id,pk,autoincrement" json:"id"`
	WebhookID      int64     `bun:"webhook_id,notnull" json:"webhook_id"`
	AccountID      int64     `bun:"account_id,notnull" json:"-"`
	NotificationID *int64    `bun:"notification_id" json:"notification_id"`
	MsgID          string    `bun:"msg_id,notnull" json:"msg_id"`
	Type           string    `bun:"type,notnull" json:"type"`
	State          string    `bun:"state,notnull" json:"state"`
	Attempts       int       `bun:"attempts,notnull" json:"attempts"`
	NextAt         time.Time `bun:"next_at,notnull" json:"next_at"`
	CreatedAt      time.Time `bun:"created_at,notnull" json:"created_at"`
	LastStatus     *int      `bun:"last_status" json:"last_status"`
	LastError      string    `bun:"last_error,notnull" json:"last_error"`
	// AttemptsLog holds the last MaxAttemptsLog attempts, oldest first.
	AttemptsLog []WebhookAttempt `bun:"-" json:"attempts_log"`
}

// WebhookAttempt is one attempt to send a delivery: when, the HTTP status
// (nil: no response), how long and the error (empty on success).
type WebhookAttempt struct {
	bun.BaseModel `bun:"table:webhook_attempts,alias:wa"`

	ID         int64     `bun:"id,pk,autoincrement" json:"-"`
	DeliveryID int64     `bun:"delivery_id,notnull" json:"-"`
	Time       time.Time `bun:"time,notnull" json:"time"`
	Status     *int      `bun:"status" json:"status"`
	DurationMS int       `bun:"duration_ms,notnull" json:"duration_ms"`
	Error      string    `bun:"error,notnull" json:"error"`
}

// MaxAttemptsLog is how many attempts a delivery shows (the last ones).
const MaxAttemptsLog = 20

// DeliveryStates are the states of a delivery.
func DeliveryStates() []string { return []string{"pending", "succeeded", "failed", "skipped"} }

// DeliveryPage asks for a page of a webhook's deliveries, newest first:
// Page from 1, PerPage rows, State an exact filter when not empty.
type DeliveryPage struct {
	Page, PerPage int
	State         string
}

// TestWebhook queues a test delivery to the webhook id inside scope
// (notification_id NULL, type WebhookTestType, pending, due now) and
// returns it, audited (webhook.test). One is pending at a time: another
// while one is pending is ErrConflict. It returns ErrNotFound,
// policy.ErrScope and ErrUnavailable.
func (s *Store) TestWebhook(ctx context.Context, scope policy.Scope, actor Actor, id int64) (WebhookDelivery, error) {
	var d WebhookDelivery
	err := s.changeWebhook(ctx, scope, actor, id, func(ctx context.Context, tx bun.Tx, w Webhook) (audit.Event, error) {
		// One test delivery pending per webhook: a test of an endpoint that
		// is down queues nothing more (the webhook's row, locked by
		// changeWebhook, orders concurrent tests).
		var pending []int64
		if err := tx.NewRaw(`SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND type = ? AND state = 'pending' LIMIT 1`,
			id, WebhookTestType).Scan(ctx, &pending); err != nil {
			return audit.Event{}, err
		}
		if len(pending) > 0 {
			return audit.Event{}, fmt.Errorf("%w: the test delivery %d of webhook %d is still pending: follow it in GET /webhooks/{id}/deliveries",
				ErrConflict, pending[0], id)
		}
		d = WebhookDelivery{WebhookID: id, AccountID: w.AccountID, Type: WebhookTestType}
		if _, err := tx.NewInsert().Model(&d).Column("webhook_id", "account_id", "type").Returning("*").Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		return audit.Event{Action: policy.ActionWebhookTest, TargetAccountID: w.AccountID, TargetID: id,
			Changes: audit.Changes{"delivery_id": {Before: nil, After: d.ID}}}, nil
	})
	if err != nil {
		return WebhookDelivery{}, err
	}
	d.AttemptsLog = []WebhookAttempt{}
	return d, nil
}

// RetryDelivery makes the delivery deliveryID of the webhook id (inside
// scope) pending again, due now, its attempts kept; a pending one is only
// made due now. Audited (webhook.retry). A delivery of another webhook is
// ErrNotFound, like one that does not exist; one being sent at this moment
// (a sender holds its row) is ErrConflict. It returns policy.ErrScope and
// ErrUnavailable.
func (s *Store) RetryDelivery(ctx context.Context, scope policy.Scope, actor Actor, id, deliveryID int64) (WebhookDelivery, error) {
	var d WebhookDelivery
	err := s.changeWebhook(ctx, scope, actor, id, func(ctx context.Context, tx bun.Tx, w Webhook) (audit.Event, error) {
		var rows []WebhookDelivery
		if err := tx.NewSelect().Model(&rows).Where("wd.id = ? AND wd.webhook_id = ?", deliveryID, id).
			For("NO KEY UPDATE SKIP LOCKED").Scan(ctx); err != nil {
			return audit.Event{}, err
		}
		if len(rows) == 0 {
			exists, err := tx.NewSelect().Model((*WebhookDelivery)(nil)).Where("wd.id = ? AND wd.webhook_id = ?", deliveryID, id).Exists(ctx)
			if err != nil {
				return audit.Event{}, err
			}
			if exists {
				return audit.Event{}, fmt.Errorf("%w: delivery %d is being sent", ErrConflict, deliveryID)
			}
			return audit.Event{}, fmt.Errorf("%w: delivery %d of webhook %d", ErrNotFound, deliveryID, id)
		}
		before := rows[0]
		if err := tx.NewRaw(`UPDATE webhook_deliveries SET state = 'pending', next_at = now(), updated_at = now()
			WHERE id = ? RETURNING *`, deliveryID).Scan(ctx, &d); err != nil {
			return audit.Event{}, err
		}
		return audit.Event{Action: policy.ActionWebhookRetry, TargetAccountID: w.AccountID, TargetID: id,
			Changes: audit.Changes{"delivery_id": {Before: deliveryID, After: deliveryID},
				"state": {Before: before.State, After: d.State}}}, nil
	})
	if err != nil {
		return WebhookDelivery{}, err
	}
	logs, err := attemptsOf(ctx, s.db, []int64{d.ID})
	if err != nil {
		return WebhookDelivery{}, Translate(err)
	}
	d.AttemptsLog = orNoAttempts(logs[d.ID])
	return d, nil
}

// WebhookDeliveries returns a page of the deliveries of the webhook id
// (inside scope), newest first, each with its last attempts, and the
// number of deliveries the request matches. A webhook outside the scope
// is ErrNotFound. It may run on a read replica. It returns
// policy.ErrScope and ErrUnavailable.
func (s *Store) WebhookDeliveries(ctx context.Context, scope policy.Scope, id int64, p DeliveryPage) ([]WebhookDelivery, int64, error) {
	if p.Page < 1 || p.PerPage < 1 {
		return nil, 0, fmt.Errorf("%w: page %d, per_page %d", ErrBadListRequest, p.Page, p.PerPage)
	}
	var out []WebhookDelivery
	var total int64
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		if _, err := rs.webhookIn(ctx, scope, id, ""); err != nil {
			return err
		}
		out = nil
		q := rs.db.NewSelect().Model(&out).Where("wd.webhook_id = ?", id)
		if p.State != "" {
			q = q.Where("wd.state = ?", p.State)
		}
		n, err := q.Order("wd.id DESC").Limit(int64(p.PerPage)).Offset(int64(p.Page-1) * int64(p.PerPage)).ScanAndCount(ctx)
		if err != nil {
			return translateOwn(err)
		}
		total = int64(n)
		ids := make([]int64, len(out))
		for i, d := range out {
			ids[i] = d.ID
		}
		logs, err := attemptsOf(ctx, rs.db, ids)
		if err != nil {
			return translateOwn(err)
		}
		for i := range out {
			out[i].AttemptsLog = orNoAttempts(logs[out[i].ID])
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []WebhookDelivery{}
	}
	return out, total, nil
}

func orNoAttempts(a []WebhookAttempt) []WebhookAttempt {
	if a == nil {
		return []WebhookAttempt{}
	}
	return a
}

// attemptsOf returns the last MaxAttemptsLog attempts of each delivery of
// ids, oldest first, by delivery.
func attemptsOf(ctx context.Context, db bun.IDB, ids []int64) (map[int64][]WebhookAttempt, error) {
	out := map[int64][]WebhookAttempt{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []WebhookAttempt
	err := db.NewRaw(`SELECT id, delivery_id, time, status, duration_ms, error FROM (
			SELECT wa.*, row_number() OVER (PARTITION BY delivery_id ORDER BY id DESC) AS n
			FROM webhook_attempts AS wa WHERE delivery_id = ANY(?)) AS last
		WHERE n <= ? ORDER BY delivery_id, id`, pgdialect.Array(ids), MaxAttemptsLog).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.DeliveryID] = append(out[r.DeliveryID], r)
	}
	return out, nil
}
