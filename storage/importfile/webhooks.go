package importfile

import (
	"context"
	"time"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
)

// The webhooks apply after the notifications (they name only accounts).
var _ = declareSection(spec[importWebhook]{name: "webhooks", after: "notifications", key: []string{"account", "url"},
	load: loadWebhook, dump: dumpWebhooks})

// importWebhook is a record of the webhooks section: the webhook as the
// API shows it (never a secret: an export holds none), its account by
// username (a subaccount's webhook is its own); the database assigns id.
type importWebhook struct {
	storage.Webhook
	Account   string       `json:"account"`
	AccountID derivedField `json:"account_id,omitzero"`
	ID        dbAssigned   `json:"id,omitzero"`
}

// importedDisabled is the disabled_reason of an imported webhook.
const importedDisabled = "imported without a secret: rotate the secret (POST /webhooks/{id}/rotate-secret), then activate"

// loadWebhook inserts a webhook of the record's account, inactive and
// without a secret (an empty sealed value, which opens with no key): an
// export holds no secret, and fleetapi import has no sealing key. Its
// owner rotates the secret and activates it (docs/decisions.md, "Webhooks").
// A record whose account already has a webhook of that url is skipped.
func loadWebhook(ctx context.Context, im *importer, ref recordRef, w importWebhook) (bool, error) {
	acct, err := im.account(ctx, ref, w.Account)
	if err != nil {
		return false, err
	}
	if w.URL == "" {
		return false, ref.errorf("url is required")
	}
	var have int
	if err := im.db.NewRaw("SELECT count(*) FROM webhooks WHERE account_id = ? AND url = ?", acct.ID, w.URL).Scan(ctx, &have); err != nil {
		return false, ref.dbError(err)
	}
	if have > 0 {
		return false, nil
	}
	types := []string(w.Types)
	if types == nil {
		types = []string{}
	}
	reason := importedDisabled
	if !w.Active && w.DisabledReason != nil {
		reason = *w.DisabledReason
	}
	// created_at and updated_at as exported (now when the record has none).
	var created, updated *time.Time
	if !w.CreatedAt.IsZero() {
		created = &w.CreatedAt
	}
	if !w.UpdatedAt.IsZero() {
		updated = &w.UpdatedAt
	}
	if _, err := im.db.NewRaw(`INSERT INTO webhooks (account_id, url, description, types, active, disabled_reason, secret, created_at, updated_at)
		VALUES (?, ?, ?, ?, false, ?, DEFAULT, coalesce(?::timestamptz, now()), coalesce(?::timestamptz, ?::timestamptz, now()))`,
		acct.ID, w.URL, w.Description, pgdialect.Array(types), reason, created, updated, created).Exec(ctx); err != nil {
		return false, ref.dbError(err)
	}
	return true, nil
}

// dumpWebhooks writes the subtree's webhooks, without their secrets.
func dumpWebhooks(ctx context.Context, ex *exporter, emit func(importWebhook) error) error {
	return eachRow(ctx, ex, "id", "wh.account_id = ANY(?)", func(w *storage.Webhook) int64 { return w.ID }, func(w *storage.Webhook) error {
		return emit(importWebhook{Webhook: *w, Account: ex.names[w.AccountID]})
	})
}
