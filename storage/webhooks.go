package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// Webhooks is the webhooks resource: /webhooks and its sub-routes
// (docs/design.md §14, Webhooks). A webhook belongs to the account that
// registered it (a subaccount's is its own, so that it receives only what
// the subaccount may list); its deliveries are reached through it.
var Webhooks = declare[Webhook]()

// Webhook is a row of webhooks as the API shows it: never its secrets,
// which only the sealed columns secret and old_secret hold and no model of
// this package reads.
type Webhook struct {
	bun.BaseModel `bun:"table:webhooks,alias:wh"`

	ID             int64      `bun:"id,pk,autoincrement" json:"id"`
	AccountID      int64      `bun:"account_id,notnull" json:"account_id" list:"filter"`
	URL            string     `bun:"url,notnull" json:"url"`
	Description    string     `bun:"description,notnull" json:"description"`
	Types          StringList `bun:"types,array,notnull" json:"types"`
	Active         bool       `bun:"active,notnull" json:"active" list:"filter"`
	DisabledReason *string    `bun:"disabled_reason" json:"disabled_reason"`
	CreatedAt      time.Time  `bun:"created_at,nullzero,notnull,default:current_timestamp" json:"created_at" list:"sort"`
	UpdatedAt      time.Time  `bun:"updated_at,nullzero,notnull,default:current_timestamp" json:"updated_at"`
}

var _ bun.BeforeAppendModelHook = (*Webhook)(nil)

// BeforeAppendModel writes a nil types as the empty list (every type).
func (w *Webhook) BeforeAppendModel(context.Context, bun.Query) error {
	w.Types = w.Types.orEmpty()
	return nil
}

// NewWebhook is a webhook to create (CreateWebhook): its id reserved with
// NewWebhookID (the sealed secret's associated data), its owner, its
// fields as checked by the api, and its secret sealed.
type NewWebhook struct {
	ID          int64
	AccountID   int64
	URL         string
	Description string
	Types       []string
	Active      bool
	// Sealed is the secret sealed for ID: never the raw secret.
	Sealed []byte
}

// WebhookPatch is a change of a webhook (UpdateWebhook): nil fields stay.
type WebhookPatch struct {
	URL         *string
	Description *string
	Types       *[]string
	Active      *bool
}

// OldSecretFor is how long a rotated secret keeps signing beside the new
// one (docs/design.md §14: 24 h).
const OldSecretFor = 24 * time.Hour

// WebhookTestType is the type of the delivery POST /webhooks/{id}/test
// queues.
const WebhookTestType = "webhook.test"

// NewWebhookID reserves the id of a webhook to create: the secret is
// sealed with it before the row exists. An id reserved and not used is a
// gap in the sequence, nothing more. It returns ErrUnavailable when the
// database cannot be reached.
func (s *Store) NewWebhookID(ctx context.Context) (int64, error) {
	var id int64
	err := s.db.NewRaw("SELECT nextval(pg_get_serial_sequence('webhooks', 'id'))").Scan(ctx, &id)
	return id, translateOwn(err)
}

// webhookFields are a webhook's audited fields (never a secret).
func webhookFields(w Webhook) map[string]any {
	return map[string]any{"url": w.URL, "description": w.Description, "types": w.Types.orEmpty(), "active": w.Active}
}

// CreateWebhook stores nw as a webhook of its account and returns it,
// audited (webhook.create) in the same transaction. The account is locked
// (step 1 of the lock order, docs/locking.md) FOR NO KEY UPDATE for its
// webhooks quota (a *limits.QuotaError above it), then the key of idem
// is claimed: a retry with the same request returns the stored webhook
// (which holds no secret) with replayed true, another request under the
// key is ErrIdempotencyKeyReused. The new row must be inside scope (a
// webhooks scope): policy.ErrScope otherwise. It returns ErrInvalid,
// ErrNotFound (the account was erased meanwhile), ErrIdempotencyKeyReused
// and ErrUnavailable.
func (s *Store) CreateWebhook(ctx context.Context, scope policy.Scope, actor Actor, nw NewWebhook, idem *IdempotentRequest) (created Webhook, replayed bool, err error) {
	if _, err := s.compiledFor(scope, Webhooks.Descriptor); err != nil {
		return Webhook{}, false, err
	}
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		locks := accountLocks{}.with(forNoKeyUpdate, nw.AccountID)
		if idem != nil {
			locks = locks.with(forKeyShare, idem.AccountID)
		}
		if err := locks.lock(ctx, tx); err != nil {
			return err
		}
		if idem != nil {
			raw, claimed, err := claimKey(ctx, tx, *idem)
			if err != nil {
				return err
			}
			if !claimed {
				replayed = true
				return json.Unmarshal(raw, &created)
			}
		}
		if err := s.checkQuota(ctx, tx, nw.AccountID, limits.QuotaWebhooks); err != nil {
			return err
		}
		if _, err := tx.NewRaw(`INSERT INTO webhooks (id, account_id, url, description, types, active, secret)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, nw.ID, nw.AccountID, nw.URL, nw.Description, pgdialect.Array([]string(StringList(nw.Types).orEmpty())), nw.Active, nw.Sealed).Exec(ctx); err != nil {
			return err
		}
		w, err := s.on(tx).webhookIn(ctx, scope, nw.ID, "")
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("%w: a webhook of account %d is outside the caller's scope", policy.ErrScope, nw.AccountID)
			}
			return err
		}
		created = w
		ev, err := audit.New(policy.ActionWebhookCreate, w.AccountID, w.ID, nil, webhookFields(w))
		if err != nil {
			return err
		}
		if err := writeAudit(ctx, tx, actor, &ev); err != nil {
			return err
		}
		if idem != nil {
			return storeIdempotentResponse(ctx, tx, *idem, created)
		}
		return nil
	})
	if err != nil {
		return Webhook{}, false, Translate(err)
	}
	return created, replayed, nil
}

// webhookIn reads the webhook id inside scope with s's database, locked
// with lock when not empty ("UPDATE"); ErrNotFound when the scope does not
// admit it or it does not exist.
func (s *Store) webhookIn(ctx context.Context, scope policy.Scope, id int64, lock string) (Webhook, error) {
	return rowIn(ctx, s, Webhooks, scope, id, lock)
}

// WebhookByID returns the webhook id when scope (a webhooks scope) admits
// it; one that does not exist and one outside the scope are both
// ErrNotFound. It may run on a read replica. It returns policy.ErrScope
// and ErrUnavailable.
func (s *Store) WebhookByID(ctx context.Context, scope policy.Scope, id int64) (Webhook, error) {
	var w Webhook
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		var err error
		w, err = rs.webhookIn(ctx, scope, id, "")
		return err
	})
	return w, err
}

// changeWebhook runs change on the webhook id inside scope (changeOwned).
func (s *Store) changeWebhook(ctx context.Context, scope policy.Scope, actor Actor, id int64,
	change func(ctx context.Context, tx bun.Tx, w Webhook) (audit.Event, error)) error {
	return changeOwned(ctx, s, Webhooks, scope, actor, id, func(w Webhook) int64 { return w.AccountID }, change)
}

// UpdateWebhook applies p to the webhook id inside scope and returns it,
// audited (webhook.update, the fields that changed; nothing is written or
// audited when nothing changes). Re-activating a webhook (active false to
// true) clears disabled_reason and failing_since (and proven_at, like a new URL). It returns ErrNotFound
// (outside the scope or absent), ErrInvalid, policy.ErrScope and
// ErrUnavailable.
func (s *Store) UpdateWebhook(ctx context.Context, scope policy.Scope, actor Actor, id int64, p WebhookPatch) (Webhook, error) {
	var out Webhook
	if p.Active != nil && !*p.Active {
		// the senders stop sending to it now, not after the sends in flight
		if _, err := s.WebhookByID(ctx, scope, id); err == nil {
			s.cancelSends(ctx, WebhookCancel{WebhookID: id})
		}
	}
	err := s.changeWebhook(ctx, scope, actor, id, func(ctx context.Context, tx bun.Tx, w Webhook) (audit.Event, error) {
		before := webhookFields(w)
		after := w
		if p.URL != nil {
			after.URL = *p.URL
		}
		if p.Description != nil {
			after.Description = *p.Description
		}
		if p.Types != nil {
			after.Types = StringList(*p.Types).orEmpty()
		}
		if p.Active != nil {
			after.Active = *p.Active
		}
		changes, err := audit.Diff(before, webhookFields(after))
		if err != nil || len(changes) == 0 {
			out = w
			return audit.Event{}, err
		}
		reactivated := after.Active && !w.Active
		if reactivated {
			// An imported webhook has no secret until it is rotated.
			var none bool
			if err := tx.NewRaw("SELECT octet_length(secret) = 0 FROM webhooks WHERE id = ?", id).Scan(ctx, &none); err != nil {
				return audit.Event{}, err
			}
			if none {
				return audit.Event{}, fmt.Errorf("%w: webhook %d has no secret: rotate it before activating", ErrConflict, id)
			}
		}
		if _, err := tx.NewRaw(`UPDATE webhooks SET url = ?, description = ?, types = ?, active = ?, updated_at = now(),
			disabled_reason = CASE WHEN ? THEN NULL ELSE disabled_reason END,
			failing_since = CASE WHEN ? THEN NULL ELSE failing_since END,
			proven_at = CASE WHEN ? OR url <> ? THEN NULL ELSE proven_at END
			WHERE id = ?`,
			after.URL, after.Description, pgdialect.Array([]string(after.Types)), after.Active, reactivated, reactivated, reactivated, after.URL, id).Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		after = Webhook{}
		if err := tx.NewSelect().Model(&after).Where(Webhooks.col(Webhooks.id.Name)+" = ?", id).Scan(ctx); err != nil {
			return audit.Event{}, err
		}
		out = after
		return audit.Event{Action: policy.ActionWebhookUpdate, TargetAccountID: w.AccountID, TargetID: id, Changes: changes}, nil
	})
	return out, err
}

// DeleteWebhook deletes the webhook id inside scope, its queued deliveries
// and their attempts with it (the foreign keys cascade), audited
// (webhook.delete). A delivery being sent holds its row lock: the delete
// waits for that send, which every sender cancels at once when told before
// the transaction (WebhookCancelChannel). It returns ErrNotFound,
// policy.ErrScope and ErrUnavailable.
func (s *Store) DeleteWebhook(ctx context.Context, scope policy.Scope, actor Actor, id int64) error {
	if _, err := s.WebhookByID(ctx, scope, id); err == nil {
		s.cancelSends(ctx, WebhookCancel{WebhookID: id})
	}
	return s.changeWebhook(ctx, scope, actor, id, func(ctx context.Context, tx bun.Tx, w Webhook) (audit.Event, error) {
		if _, err := tx.NewDelete().Model((*Webhook)(nil)).Where(Webhooks.col(Webhooks.id.Name)+" = ?", id).Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		changes, err := audit.Diff(webhookFields(w), map[string]any{"url": nil, "description": nil, "types": nil, "active": nil})
		return audit.Event{Action: policy.ActionWebhookDelete, TargetAccountID: w.AccountID, TargetID: id, Changes: changes}, err
	})
}

// RotateWebhookSecret makes sealed (the new secret, sealed for id) the
// webhook's secret; the secret it replaces keeps signing until
// OldSecretFor from now (old_secret_until). A second rotation within that
// time drops the older secret: at most two secrets sign. Audited
// (webhook.rotate: the instant until which the replaced secret signs,
// never a secret). It returns the webhook, ErrNotFound, policy.ErrScope
// and ErrUnavailable.
func (s *Store) RotateWebhookSecret(ctx context.Context, scope policy.Scope, actor Actor, id int64, sealed []byte) (Webhook, time.Time, error) {
	var out Webhook
	var until time.Time
	err := s.changeWebhook(ctx, scope, actor, id, func(ctx context.Context, tx bun.Tx, w Webhook) (audit.Event, error) {
		var prev *time.Time
		if err := tx.NewRaw(`SELECT old_secret_until FROM webhooks WHERE id = ?`, id).Scan(ctx, &prev); err != nil {
			return audit.Event{}, err
		}
		if err := tx.NewRaw(`UPDATE webhooks SET old_secret = secret, secret = ?,
			old_secret_until = now() + ? * interval '1 microsecond', updated_at = now()
			WHERE id = ? RETURNING old_secret_until, updated_at`, sealed, OldSecretFor.Microseconds(), id).Scan(ctx, &until, &w.UpdatedAt); err != nil {
			return audit.Event{}, err
		}
		out = w
		var before any
		if prev != nil {
			before = prev.UTC()
		}
		return audit.Event{Action: policy.ActionWebhookRotate, TargetAccountID: w.AccountID, TargetID: id,
			Changes: audit.Changes{"previous_signs_until": {Before: before, After: until.UTC()}}}, nil
	})
	return out, until, err
}
