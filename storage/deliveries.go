package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The types of webhook deliveries (webhook_deliveries.type, the body's
// "type"): a notification's and a test's (POST /webhooks/{id}/test).
const (
	DeliveryNotificationType = "notification.created"
	DeliveryTestType         = "webhook.test"
)

// The states of a delivery (webhook_deliveries.state).
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
	DeliverySkipped   = "skipped"
)

// deliveryUsageRoute is the usage_daily route under which a webhook
// owner's delivery attempts are counted (deliveries_attempted): not an
// API route, so never a request.
const deliveryUsageRoute = "webhook deliveries"

// claimCandidates is the most due deliveries one claim looks at before it
// gives up: each one it passes (a transaction rolled back) is of an
// endpoint whose slots are all taken (or that was deactivated since the
// look).
const claimCandidates = 32

// Delivery is the claimed row of webhook_deliveries: one message to one
// endpoint (docs/design.md §14).
type Delivery struct {
	ID        int64
	WebhookID int64
	// AccountID is the webhook's owner.
	AccountID int64
	// NotificationID is nil for a test delivery.
	NotificationID *int64
	// MsgID is the webhook-id header, the same on every attempt.
	MsgID     string
	Type      string
	Attempts  int
	CreatedAt time.Time
}

// DeliveryWebhook is the endpoint of a claimed delivery, read under the
// claim's lock: its secrets are sealed (webhook.KeyRing opens them, the
// webhook id as associated data).
type DeliveryWebhook struct {
	ID             int64
	AccountID      int64
	URL            string
	Secret         []byte
	OldSecret      []byte
	OldSecretUntil *time.Time
	FailingSince   *time.Time
	// ProvenAt is when the endpoint first answered 2xx since its URL was
	// set or it was re-activated; nil: not proven yet.
	ProvenAt *time.Time
}

// Failing reports whether the endpoint is failing (failing_since set).
func (w DeliveryWebhook) Failing() bool { return w.FailingSince != nil }

// Unproven reports whether the endpoint is not failing and not proven yet
// (proven_at unset). An endpoint neither failing nor unproven is healthy:
// only then does it get every slot and a share of the workers beyond the
// quarter kept for the failing ones and the quarter kept for the
// unproven ones (docs/decisions.md, "Unproven endpoints").
func (w DeliveryWebhook) Unproven() bool { return w.FailingSince == nil && w.ProvenAt == nil }

// Claim is one delivery claimed by a sender, inside its own open
// transaction: the delivery's row is locked FOR UPDATE, its webhook's FOR
// KEY SHARE, and one of the endpoint's slots (a transaction-level advisory
// lock) is held, until Record, Skip or Release ends the transaction
// (docs/locking.md, "Webhook deliveries"). A Claim is used by one
// goroutine.
type Claim struct {
	tx    bun.Tx
	store *Store
	// root is the Store the claim was made on, for the endpoint's
	// bookkeeping after the commit.
	root    *Store
	ended   bool
	onEnd   []func()
	Now     time.Time
	Webhook DeliveryWebhook
	// Owner is the webhook's owner account with the accounts above it,
	// as a principal without a token (tenancy.Principal.Token is zero).
	Owner tenancy.Principal
	Delivery
}

// ClaimOptions say which deliveries a claim may take.
type ClaimOptions struct {
	// EndpointSlots is the most attempts in flight to one healthy
	// endpoint, across every sender; an endpoint that is failing
	// (failing_since set) or not proven yet (proven_at unset) has one
	// slot.
	EndpointSlots int
	// SkipFailing leaves the deliveries of failing endpoints
	// (failing_since set) alone, SkipUnproven those of endpoints not
	// failing and not proven yet (proven_at unset): the sender's share of
	// workers for them is taken.
	SkipFailing, SkipUnproven bool
	// Exclude are webhooks whose deliveries are not taken (the ones a
	// DELETE, a deactivation or an erase is canceling, the ones the
	// sender knows full).
	Exclude []int64
	// Retries takes only deliveries that were attempted before (the
	// retries' share of the sender's claims).
	Retries bool
}

// ClaimDelivery claims the next due delivery (state pending, next_at
// passed) of an active webhook, first attempts before retries (only
// retries with o.Retries), then by next_at and id, skipping rows other
// senders hold (FOR UPDATE SKIP LOCKED) and endpoints whose slots (the
// first slots of endpointSlots advisory keys of the webhook) are all taken
// by other senders. One statement claims the row, reads and locks its
// webhook and takes a slot; a row whose endpoint is full (or whose webhook
// is being deleted or was deactivated since the look) is given up by
// rolling the transaction back, which releases its row lock and any slot,
// and the next claim, in a new transaction, looks past the endpoint. It
// returns nil and no error when nothing is due or every due delivery is
// held or its endpoint full. The returned Claim holds a database
// connection until it is ended. It returns ErrUnavailable when the
// database cannot be reached.
func (s *Store) ClaimDelivery(ctx context.Context, o ClaimOptions) (*Claim, error) {
	o.EndpointSlots = max(o.EndpointSlots, 1)
	full := append([]int64{}, o.Exclude...)
	for range claimCandidates {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return nil, translateOwn(err)
		}
		c := &Claim{tx: tx, store: s.on(tx), root: s}
		ok, passed, err := c.claim(ctx, o, full)
		if err == nil && ok {
			return c, nil
		}
		_ = tx.Rollback()
		if isDeadlock(err) {
			// the claim met a DELETE of the row's webhook: see
			// claimSQL; rolled back, the DELETE goes on, and the
			// next try does not meet it
			continue
		}
		if err != nil || passed == 0 {
			return nil, translateOwn(err)
		}
		full = append(full, passed)
	}
	return nil, nil
}

// claimSQL claims the next due delivery of an active webhook not excluded
// (args: the webhook ids excluded, whether only retries, whether only
// healthy endpoints, the slots of a healthy endpoint), in the order of
// webhook_deliveries_due_idx (a claim reads the first due rows of the
// index, never sorts the queue), then reads its webhook FOR KEY SHARE
// SKIP LOCKED (NULLs when a DELETE holds it) and takes the first free
// slot of the endpoint (NULL when none: a failing endpoint has one
// slot, docs/locking.md), in one round trip. When the webhook's row was
// updated since the statement's snapshot (a PATCH active false) and a
// DELETE of it now waits for the claimed delivery's row, PostgreSQL 15
// waits for the DELETE while it carries the KEY SHARE lock to the newer
// version of the row, SKIP LOCKED or not: a deadlock, which PostgreSQL
// ends by failing one of the two; when the claim fails, ClaimDelivery
// tries again.
const claimSQL = `WITH d AS (
  SELECT d.id, d.webhook_id, d.account_id, d.notification_id, d.msg_id, d.type, d.attempts, d.created_at
  FROM webhook_deliveries AS d
  WHERE d.state = 'pending' AND d.next_at <= now() AND d.webhook_id <> ALL (?::bigint[]) AND (NOT ? OR d.attempts > 0)
    AND EXISTS (SELECT 1 FROM webhooks AS w WHERE w.id = d.webhook_id AND w.active
      AND (NOT ? OR w.failing_since IS NULL) AND (NOT ? OR w.failing_since IS NOT NULL OR w.proven_at IS NOT NULL))
  ORDER BY (d.attempts > 0), d.next_at, d.id
  LIMIT 1
  FOR UPDATE OF d SKIP LOCKED)
SELECT d.id, d.webhook_id, d.account_id, d.notification_id, d.msg_id, d.type, d.attempts, d.created_at, now(),
  set_config('synchronous_commit', 'off', true),
  w.id, w.account_id, w.url, coalesce(w.active, false), w.secret, w.old_secret, w.old_secret_until, w.failing_since, w.proven_at, slot.k
FROM d
LEFT JOIN LATERAL (SELECT w.id, w.account_id, w.url, w.active, w.secret, w.old_secret, w.old_secret_until, w.failing_since, w.proven_at
  FROM webhooks AS w WHERE w.id = d.webhook_id FOR KEY SHARE SKIP LOCKED) AS w ON true
LEFT JOIN LATERAL (SELECT k FROM generate_series(0, CASE WHEN w.failing_since IS NULL AND w.proven_at IS NOT NULL THEN ?::int - 1 ELSE 0 END) AS k
  WHERE w.id IS NOT NULL AND pg_try_advisory_xact_lock(hashtextextended('fleet_webhook_slot:' || d.webhook_id || ':' || k, 0))
  LIMIT 1) AS slot ON true`

// claim finds, locks and reads the delivery of c, past the webhooks
// full; false when there is none to take, with passed the webhook of the
// row it found and must give up (0 when it found none).
func (c *Claim) claim(ctx context.Context, o ClaimOptions, full []int64) (ok bool, passed int64, err error) {
	d, w := &c.Delivery, &c.Webhook
	var wid, waccount sql.NullInt64
	var url sql.NullString
	var slot sql.NullInt64
	active := false
	var commit string
	err = c.tx.QueryRowContext(ctx, claimSQL, pgdialect.Array(full), o.Retries, o.SkipFailing, o.SkipUnproven, o.EndpointSlots).Scan(
		&d.ID, &d.WebhookID, &d.AccountID, &d.NotificationID, &d.MsgID, &d.Type, &d.Attempts, &d.CreatedAt, &c.Now, &commit,
		&wid, &waccount, &url, &active, &w.Secret, &w.OldSecret, &w.OldSecretUntil, &w.FailingSince, &w.ProvenAt, &slot)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	if !active || !slot.Valid {
		// the endpoint is full, deactivated since the look, or being
		// deleted (locked FOR UPDATE: a DELETE of the webhook, which
		// then waits for its deliveries' rows; waiting for it here,
		// holding one of them, would be a cycle): the caller rolls back
		// and looks past the endpoint
		return false, d.WebhookID, nil
	}
	w.ID, w.AccountID, w.URL = wid.Int64, waccount.Int64, url.String
	return true, 0, c.loadOwner(ctx)
}

// loadOwner reads the webhook's owner with the accounts above it.
func (c *Claim) loadOwner(ctx context.Context) error {
	var row accountRow
	err := c.tx.NewSelect().Model(&row).ModelTableExpr(`"accounts" AS "account"`).ColumnExpr(`"account".*`).ColumnExpr(ancestorsColumn).
		Where(`"account"."id" = ?`, c.Webhook.AccountID).Scan(ctx)
	if err != nil {
		return err
	}
	p := principalRow{Ancestors: row.Ancestors}
	p.Account = &row.Account
	c.Owner = p.principal()
	c.Owner.Token = tenancy.Token{}
	return nil
}

// Release ends the claim without a change: the delivery stays as it was,
// due again at once (a sender shutting down, or a failure before the
// send). It is safe to call after Record or Skip.
func (c *Claim) Release() {
	if !c.ended {
		c.ended = true
		_ = c.tx.Rollback()
	}
	c.runOnEnd()
}

// OnEnd calls f once the claim has ended (Record, Skip or Release).
func (c *Claim) OnEnd(f func()) {
	c.onEnd = append(c.onEnd, f)
}

// runOnEnd runs the OnEnd functions once.
func (c *Claim) runOnEnd() {
	fs := c.onEnd
	c.onEnd = nil
	for _, f := range fs {
		f()
	}
}

// Skip marks the delivery skipped with reason (the owner can no longer
// list its notification, docs/design.md §14): nothing was sent, no attempt
// is recorded or counted. It ends the claim.
func (c *Claim) Skip(ctx context.Context, reason string) error {
	defer c.Release()
	_, err := c.tx.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'skipped', last_error = left(?, 1000), updated_at = now() WHERE id = ?`,
		reason, c.ID)
	if err != nil {
		return translateOwn(err)
	}
	c.ended = true
	return translateOwn(c.tx.Commit())
}

// Attempt is the outcome of one attempt to send a claimed delivery.
type Attempt struct {
	// OK: the receiver answered 2xx in time.
	OK bool
	// Status is the HTTP status; 0 when no response came.
	Status   int
	Duration time.Duration
	// Error says why the attempt failed (never a secret, never the body).
	Error string
	// RetryAfter is the receiver's Retry-After, 0 when none.
	RetryAfter time.Duration
}

// Retry is the delivery's retry policy (docs/design.md §14): Schedule[i]
// is the wait after the (i+1)th failed attempt, and an attempt that fails
// with no entry left fails the delivery; an endpoint whose attempts have
// all failed for DisableAfter is disabled.
type Retry struct {
	Schedule     []time.Duration
	DisableAfter time.Duration
	// MaxRetryAfter bounds the wait a receiver's Retry-After may ask for.
	MaxRetryAfter time.Duration
}

// Recorded is what Record did.
type Recorded struct {
	// State is the delivery's new state: succeeded, pending (retried at
	// NextAt) or failed.
	State  string
	NextAt time.Time
	// Disabled is true when the attempt disabled the endpoint.
	Disabled bool
}

// Record writes the attempt a (webhook_attempts), moves the delivery on
// (succeeded; pending again after the next wait of r, or Retry-After when
// later; failed after the last), keeps the endpoint's failing_since
// (set at the first failure since a success, cleared by a success) and
// disables an endpoint failing for r.DisableAfter, counts the attempt in
// the owner's usage (deliveries_attempted), and commits: all or nothing.
// It ends the claim. It returns ErrUnavailable when the database cannot be
// reached (then nothing is recorded and the delivery is due again).
func (c *Claim) Record(ctx context.Context, a Attempt, r Retry) (Recorded, error) {
	defer c.Release()
	var out Recorded
	// the transaction's now(), read by the claim
	now := c.Now
	var status *int
	if a.Status != 0 {
		status = &a.Status
	}
	errText := a.Error
	if !a.OK && errText == "" {
		errText = "no 2xx answer"
	}
	attempts := c.Attempts + 1
	switch {
	case a.OK:
		out.State = DeliverySucceeded
	case attempts-1 < len(r.Schedule):
		wait := r.Schedule[attempts-1]
		if ra := min(a.RetryAfter, max(r.MaxRetryAfter, wait)); ra > wait {
			wait = ra
		}
		out.State, out.NextAt = DeliveryPending, now.Add(wait)
	default:
		out.State = DeliveryFailed
	}
	next := out.NextAt
	if next.IsZero() {
		next = now
	}
	// The attempt, the delivery and, for a success, the endpoint's
	// failing_since cleared when its row is free, in one round trip.
	// cleared says whether the endpoint is left as it should be: false
	// when a success found it failing (in this statement's snapshot) but
	// could not take its row, which another transaction holds (a PATCH, a
	// rotation or a DELETE of the webhook, which lock it FOR NO KEY UPDATE
	// and then may wait for this claim's delivery row): never waiting for
	// the webhook while holding the delivery (docs/locking.md, "Webhook
	// deliveries"), the bookkeeping then runs after the commit, in a
	// transaction of its own.
	var cleared bool
	if err := c.tx.QueryRowContext(ctx, `WITH a AS (
  INSERT INTO webhook_attempts (delivery_id, time, status, duration_ms, error) VALUES (?0, ?1, ?2, ?3, left(?4, 1000))),
u AS (
  UPDATE webhook_deliveries SET state = ?5, attempts = ?6, next_at = ?7, last_status = ?2, last_error = left(?4, 1000), updated_at = now()
  WHERE id = ?0),
f AS (
  UPDATE webhooks SET failing_since = CASE WHEN failing_since <= ?1 THEN NULL ELSE failing_since END, proven_at = coalesce(proven_at, ?1)
  WHERE ?9 AND id IN (SELECT id FROM webhooks WHERE id = ?8 AND (failing_since <= ?1 OR proven_at IS NULL) FOR NO KEY UPDATE SKIP LOCKED)
  RETURNING id)
SELECT NOT ?9 OR EXISTS (SELECT 1 FROM f) OR NOT EXISTS (SELECT 1 FROM webhooks WHERE id = ?8 AND (failing_since <= ?1 OR proven_at IS NULL))`,
		c.ID, now, status, max(a.Duration.Milliseconds(), 0), errText, out.State, attempts, next, c.WebhookID, a.OK).Scan(&cleared); err != nil {
		return out, translateOwn(err)
	}
	deferred := a.OK && !cleared
	if !a.OK {
		// a failure's bookkeeping: when the endpoint's row is free, in
		// the same transaction, else after the commit (as above)
		if _, err := c.tx.ExecContext(ctx, "SAVEPOINT delivery_endpoint"); err != nil {
			return out, translateOwn(err)
		}
		if _, err := c.tx.ExecContext(ctx, `SELECT 1 FROM webhooks WHERE id = ? FOR NO KEY UPDATE NOWAIT`, c.WebhookID); err != nil {
			if !isLockNotAvailable(err) {
				return out, translateOwn(err)
			}
			if _, err := c.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT delivery_endpoint"); err != nil {
				return out, translateOwn(err)
			}
			deferred = true
		} else if err := c.endpoint(ctx, c.tx, a, r, now, errText, &out, false); err != nil {
			return out, translateOwn(err)
		}
	}
	// The owner's usage and the COMMIT in one message (the driver sends
	// a query without parameters as a simple query, which may hold two
	// statements): the owner's usage row, which every attempt to its
	// endpoints updates, stays locked for no round trip to the sender.
	// The transaction then has ended; database/sql's Commit ends its own
	// side (PostgreSQL answers it with a warning, no transaction in
	// progress).
	q, args := usageUpsert([]UsageCount{c.usage(now)})
	if _, err := c.tx.ExecContext(ctx, q+";\nCOMMIT", args...); err != nil {
		return out, translateOwn(err)
	}
	c.ended = true
	_ = c.tx.Commit()
	if deferred {
		err := c.root.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var fs *time.Time
			err := tx.QueryRowContext(ctx, `SELECT failing_since FROM webhooks WHERE id = ? FOR NO KEY UPDATE`, c.WebhookID).Scan(&fs)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			c.Webhook.FailingSince = fs
			return c.endpoint(ctx, tx, a, r, now, errText, &out, true)
		})
		// the attempt is recorded: a lost bookkeeping is caught up by the
		// endpoint's next attempt
		_ = err
	}
	return out, nil
}

// isDeadlock reports whether err is PostgreSQL's deadlock_detected
// (40P01).
func isDeadlock(err error) bool {
	var pg interface{ Field(byte) string }
	return err != nil && errors.As(err, &pg) && pg.Field('C') == "40P01"
}

// isLockNotAvailable reports whether err is PostgreSQL's
// lock_not_available (55P03: a NOWAIT that found the row locked).
func isLockNotAvailable(err error) bool {
	var pg interface{ Field(byte) string }
	return errors.As(err, &pg) && pg.Field('C') == "55P03"
}

// endpoint keeps the webhook's failing_since and disables it after
// r.DisableAfter of failures, in tx, which holds the webhook's row. late
// is true after the attempt's own commit: a failure then leaves the
// endpoint alone when a success of it was recorded after the attempt.
func (c *Claim) endpoint(ctx context.Context, tx bun.Tx, a Attempt, r Retry, now time.Time, errText string, out *Recorded, late bool) error {
	if a.OK {
		_, err := tx.ExecContext(ctx, `UPDATE webhooks SET failing_since = CASE WHEN failing_since <= ?0 THEN NULL ELSE failing_since END,
  proven_at = coalesce(proven_at, ?0) WHERE id = ?1 AND (failing_since <= ?0 OR proven_at IS NULL)`, now, c.WebhookID)
		return err
	}
	if late {
		var recovered bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_attempts AS a JOIN webhook_deliveries AS d ON d.id = a.delivery_id
WHERE d.webhook_id = ? AND a.time > ? AND a.status BETWEEN 200 AND 299)`, c.WebhookID, now).Scan(&recovered); err != nil || recovered {
			return err
		}
	}
	since := now
	if c.Webhook.FailingSince != nil {
		since = *c.Webhook.FailingSince
	}
	if c.Webhook.FailingSince != nil && r.DisableAfter > 0 && now.Sub(since) >= r.DisableAfter {
		reason := "every delivery failed since " + since.UTC().Format(time.RFC3339) + ": " + errText
		_, err := tx.ExecContext(ctx, `UPDATE webhooks SET active = false, disabled_reason = left(?, 500), updated_at = now() WHERE id = ? AND active`, reason, c.WebhookID)
		out.Disabled = err == nil
		return err
	}
	if c.Webhook.FailingSince == nil {
		_, err := tx.ExecContext(ctx, `UPDATE webhooks SET failing_since = ? WHERE id = ? AND failing_since IS NULL`, now, c.WebhookID)
		return err
	}
	return nil
}

// usage is the attempt's usage count: one delivery attempted, for the
// webhook's owner, with its ancestors and billed account as the API
// counts a request's (api.usage).
func (c *Claim) usage(now time.Time) UsageCount {
	p := c.Owner
	ancestors := make([]int64, len(p.Ancestors))
	billed := p.Account.ID
	below := p.Account.Type != tenancy.Admin
	for i, a := range p.Ancestors {
		ancestors[i] = a.ID
		if below = below && a.Type != tenancy.Admin; below {
			billed = a.ID
		}
	}
	return UsageCount{AccountID: p.Account.ID, Ancestors: ancestors, BilledAccountID: billed, Day: now,
		Route: deliveryUsageRoute, DeliveriesAttempted: 1}
}

// DeliveryQueue is the queue of due deliveries: how many, and since when
// the oldest is due (zero when none).
type DeliveryQueue struct {
	Due       int64
	OldestDue time.Time
	// NextDue is the earliest next_at of any pending delivery of an
	// active webhook, due or not (zero when none): when a sender that
	// found nothing wakes next.
	NextDue time.Time
}

// Deliveries reads the queue of pending deliveries of active webhooks. It
// returns ErrUnavailable when the database cannot be reached.
func (s *Store) Deliveries(ctx context.Context) (DeliveryQueue, error) {
	var q DeliveryQueue
	var oldest, next sql.NullTime
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE d.next_at <= now()), min(d.next_at) FILTER (WHERE d.next_at <= now()), min(d.next_at)
FROM webhook_deliveries AS d JOIN webhooks AS w ON w.id = d.webhook_id AND w.active
WHERE d.state = 'pending'`).Scan(&q.Due, &oldest, &next)
	if err != nil {
		return q, translateOwn(err)
	}
	q.OldestDue, q.NextDue = oldest.Time, next.Time
	return q, nil
}

// Notification reads the claimed delivery's notification through scope,
// the owner's notifications scope decided now (policy.Engine.Scope): a
// notification the owner can no longer list is ErrNotFound, like one
// that is gone. It returns policy.ErrScope for a scope of another
// resource and ErrNotFound for a test delivery (no notification).
func (c *Claim) Notification(ctx context.Context, scope policy.Scope) (Notification, error) {
	var n Notification
	if c.NotificationID == nil {
		return n, ErrNotFound
	}
	q, err := c.store.scopedSelect(scope, Notifications.Descriptor, &n)
	if err != nil {
		return n, err
	}
	err = q.Where(Notifications.col(Notifications.id.Name)+" = ?", *c.NotificationID).Limit(1).Scan(ctx)
	return n, translateOwn(err)
}
