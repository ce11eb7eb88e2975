package storage

import (
	"context"
	"strconv"
	"strings"
)

// WebhookCancelChannel is the channel on which a DELETE of a webhook, its
// deactivation (PATCH active false) and an account erase, before their
// transaction, tell every replica's sender to cancel its sends in flight
// to them (delivery.Sender.Cancel): a message, not a write, so nothing is
// half written when the change then fails; the change itself never waits
// for a receiver.
const WebhookCancelChannel = "fleet_webhook_cancel"

// WebhookCancel is one message of WebhookCancelChannel: a webhook
// ("webhook:<id>") or an account, with every account below it
// ("account:<id>").
type WebhookCancel struct {
	WebhookID int64
	AccountID int64
}

// String is the message's payload.
func (m WebhookCancel) String() string {
	if m.WebhookID != 0 {
		return "webhook:" + strconv.FormatInt(m.WebhookID, 10)
	}
	return "account:" + strconv.FormatInt(m.AccountID, 10)
}

// ParseWebhookCancel reads a payload of WebhookCancelChannel; false when
// it is not one.
func ParseWebhookCancel(payload string) (WebhookCancel, bool) {
	kind, id, ok := strings.Cut(payload, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || n <= 0 {
		return WebhookCancel{}, false
	}
	switch kind {
	case "webhook":
		return WebhookCancel{WebhookID: n}, true
	case "account":
		return WebhookCancel{AccountID: n}, true
	}
	return WebhookCancel{}, false
}

// cancelSends sends m on WebhookCancelChannel, outside any transaction of
// the caller's change: best effort (a sender that misses it finishes its
// send, and the change waits for it as before).
func (s *Store) cancelSends(ctx context.Context, m WebhookCancel) {
	_, _ = s.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", WebhookCancelChannel, m.String())
}
