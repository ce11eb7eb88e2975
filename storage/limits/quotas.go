package limits

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// Quotas on what a customer creates (docs/design.md §12, docs/management.md
// "Quotas"). Each account has a limit per quota: its own override (the
// accounts' quota_* columns, set through PATCH /accounts/{id}) or the
// platform default (storage.Store.WithQuotas, from FLEET_QUOTA_*). A create checks
// the limit of the account it counts against in its own transaction,
// after locking that account's row (FOR NO KEY UPDATE), and counts the account's
// rows after the lock: two creates in one account wait for each other, and
// the second counts the first's row, so concurrent creators never exceed
// a quota. Admin accounts (the operator's own) have no quotas. Operator
// paths (fleetapi import, fleetapi token create) are not limited.

// Quota names one quota.
type Quota string

// The quotas: what each counts, for one account.
const (
	// QuotaSubaccounts counts the accounts directly below the account
	// (a user's subaccounts, a manager's users).
	QuotaSubaccounts Quota = "subaccounts"
	// QuotaTokens counts the account's active tokens: not revoked, not
	// expired.
	QuotaTokens Quota = "tokens"
	// QuotaDevices counts the devices (objects) the account owns.
	QuotaDevices Quota = "devices"
	// QuotaPassengers counts the passengers the account owns (a
	// subaccount's passengers are its parent's).
	QuotaPassengers Quota = "passengers"
	// QuotaWebhooks counts the webhooks the account registered (a
	// subaccount's are its own: docs/design.md §14, Webhooks).
	QuotaWebhooks Quota = "webhooks"
	// QuotaZones counts the zones the account owns (docs/design.md §15;
	// a subaccount writes none).
	QuotaZones Quota = "zones"
	// QuotaEvents counts the event rules the account owns (docs/design.md
	// §15: POST /events).
	QuotaEvents Quota = "events"
)

// AllQuotas lists the quotas in their documented order.
var AllQuotas = []Quota{QuotaSubaccounts, QuotaTokens, QuotaDevices, QuotaPassengers, QuotaWebhooks, QuotaZones, QuotaEvents}

// Quotas holds one limit per quota; nil is unlimited.
type Quotas struct {
	Subaccounts *int64 `json:"subaccounts"`
	Tokens      *int64 `json:"tokens"`
	Devices     *int64 `json:"devices"`
	Passengers  *int64 `json:"passengers"`
	Webhooks    *int64 `json:"webhooks"`
	Zones       *int64 `json:"zones"`
	Events      *int64 `json:"events"`
}

// quotaField returns the one of the six fields, given for each quota in
// the order of AllQuotas, that holds quota name (nil for an unknown name):
// the one place that maps a quota name to a field, for limits and for use.
func quotaField[T any](name Quota, subaccounts, tokens, devices, passengers, webhooks, zones, events *T) *T {
	switch name {
	case QuotaSubaccounts:
		return subaccounts
	case QuotaTokens:
		return tokens
	case QuotaDevices:
		return devices
	case QuotaPassengers:
		return passengers
	case QuotaWebhooks:
		return webhooks
	case QuotaZones:
		return zones
	case QuotaEvents:
		return events
	}
	return nil
}

// field returns the field of q that holds the limit of name (nil for an
// unknown name).
func (q *Quotas) field(name Quota) **int64 {
	return quotaField(name, &q.Subaccounts, &q.Tokens, &q.Devices, &q.Passengers, &q.Webhooks, &q.Zones, &q.Events)
}

// Get returns the limit of q (nil: unlimited).
func (q Quotas) Get(name Quota) *int64 {
	if f := q.field(name); f != nil {
		return *f
	}
	return nil
}

// Set sets the limit of q.
func (q *Quotas) Set(name Quota, v *int64) {
	if f := q.field(name); f != nil {
		*f = v
	}
}

// Map returns the limits by quota name (nil: unlimited).
func (q Quotas) Map() map[string]any {
	out := map[string]any{}
	for _, name := range AllQuotas {
		var v any
		if p := q.Get(name); p != nil {
			v = *p
		}
		out[string(name)] = v
	}
	return out
}

// QuotaUsage is how much of each quota an account uses.
type QuotaUsage struct {
	Subaccounts int64 `json:"subaccounts"`
	Tokens      int64 `json:"tokens"`
	Devices     int64 `json:"devices"`
	Passengers  int64 `json:"passengers"`
	Webhooks    int64 `json:"webhooks"`
	Zones       int64 `json:"zones"`
	Events      int64 `json:"events"`
}

// ErrQuotaExceeded is wrapped by a *QuotaError.
var ErrQuotaExceeded = errors.New("quota exceeded")

// QuotaError is a create refused because it would exceed a quota of the
// account: Used rows counted, Limit allowed.
type QuotaError struct {
	Quota     Quota
	AccountID int64
	Limit     int64
	Used      int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("account %d: the %s quota is %d and %d are used", e.AccountID, e.Quota, e.Limit, e.Used)
}

// Is makes a *QuotaError an ErrQuotaExceeded.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// Effective returns the limits in force for an account whose own
// overrides are overrides (nil: the default), with the platform defaults:
// its overrides, else the defaults; none for an admin.
func Effective(overrides Quotas, admin bool, defaults Quotas) Quotas {
	if admin {
		return Quotas{}
	}
	out := defaults
	for _, name := range AllQuotas {
		if v := overrides.Get(name); v != nil {
			out.Set(name, v)
		}
	}
	return out
}

// Used counts the rows of account that quota q counts, with db (the
// create's transaction, after the account's row is locked).
func Used(ctx context.Context, db bun.IDB, account int64, q Quota) (int64, error) {
	var n int64
	var err error
	switch q {
	case QuotaSubaccounts:
		err = db.NewRaw(`SELECT count(*) FROM accounts WHERE manager_id = ?`, account).Scan(ctx, &n)
	case QuotaTokens:
		err = db.NewRaw(`SELECT count(*) FROM tokens WHERE account_id = ? AND revoked_at IS NULL
			AND (expires_at IS NULL OR expires_at > now())`, account).Scan(ctx, &n)
	case QuotaDevices:
		// The row counters (docs/architecture.md, "Counters"), kept in the
		// writing transactions by the triggers: exact, without a scan.
		err = db.NewRaw(`SELECT COALESCE(sum(n), 0) FROM account_row_counts WHERE resource = 'objects' AND account_id = ?`, account).Scan(ctx, &n)
	case QuotaPassengers:
		err = db.NewRaw(`SELECT COALESCE(sum(n), 0) FROM account_row_counts WHERE resource = 'passengers' AND account_id = ?`, account).Scan(ctx, &n)
	case QuotaWebhooks:
		// Few rows per account (the quota's default is small): a count of
		// its (account_id, id) index.
		err = db.NewRaw(`SELECT count(*) FROM webhooks WHERE account_id = ?`, account).Scan(ctx, &n)
	case QuotaZones:
		// Few rows per account: a count of its (account_id, id) index.
		err = db.NewRaw(`SELECT count(*) FROM zones WHERE account_id = ?`, account).Scan(ctx, &n)
	case QuotaEvents:
		err = db.NewRaw(`SELECT COALESCE(sum(n), 0) FROM account_row_counts WHERE resource = 'events' AND account_id = ?`, account).Scan(ctx, &n)
	default:
		err = fmt.Errorf("limits: unknown quota %q", q)
	}
	return n, err
}

// UsageOf counts, with db, how much of each quota the account uses now.
func UsageOf(ctx context.Context, db bun.IDB, account int64) (QuotaUsage, error) {
	var u QuotaUsage
	for _, q := range AllQuotas {
		n, err := Used(ctx, db, account, q)
		if err != nil {
			return QuotaUsage{}, err
		}
		*quotaField(q, &u.Subaccounts, &u.Tokens, &u.Devices, &u.Passengers, &u.Webhooks, &u.Zones, &u.Events) = n
	}
	return u, nil
}

// Check refuses, with a *QuotaError, one more row of quota q in the
// account when it already uses its limit (nil: unlimited). It runs inside
// the create's transaction db, after the caller locked the account's row
// FOR NO KEY UPDATE (storage's checkQuota), before the insert.
func Check(ctx context.Context, db bun.IDB, account int64, q Quota, limit *int64) error {
	if limit == nil {
		return nil
	}
	used, err := Used(ctx, db, account, q)
	if err != nil {
		return err
	}
	if used+1 > *limit {
		return &QuotaError{Quota: q, AccountID: account, Limit: *limit, Used: used}
	}
	return nil
}

// ErrNear is CheckShared's answer for an account within reach of its
// limit: the caller reruns its transaction with the exclusive check
// (storage's checkQuota, then Check).
var ErrNear = errors.New("storage: quota within reach of its limit")

// CheckShared is the exclusive check (storage's checkQuota, Check) for the hot creates of a counted quota
// (passengers, devices: the row counters tell the use in one read),
// without serialising one account's creates while it is far from its
// limit. The caller has locked the account's row FOR SHARE and read its
// limit (storage's checkQuotaShared); that lock which concurrent creates
// share but which conflicts with checkQuota's and a management write's
// FOR NO KEY UPDATE and an erase's FOR UPDATE. It answers nil when the account has
// no limit, or when its committed use plus the server's max_connections
// and max_prepared_transactions stays below the limit; otherwise
// ErrNear, and the caller starts again with the exclusive check.
//
// Why no create exceeds the limit (docs/decisions.md, "Quotas without a
// queue"): every uncommitted create holds a server connection or a
// prepared transaction, so at most max_connections +
// max_prepared_transactions of them are in flight. A create takes the
// shared path only when committed + that bound < limit, so committed plus
// in-flight shared creates stays below the limit whenever one starts,
// and a commit only moves one from in-flight to committed. An exclusive
// check (checkQuota) waits until no shared create holds the row, so it
// counts every create that can still commit before it, and shared creates
// wait while it holds the row.
func CheckShared(ctx context.Context, db bun.IDB, account int64, q Quota, limit *int64) error {
	resource := map[Quota]string{QuotaPassengers: "passengers", QuotaDevices: "objects"}[q]
	if resource == "" {
		return fmt.Errorf("storage: quota %q has no shared check", q)
	}
	if limit == nil {
		return nil
	}
	var used, inFlight int64
	if err := db.NewRaw(`SELECT COALESCE(sum(n), 0),
		current_setting('max_connections')::bigint + current_setting('max_prepared_transactions')::bigint
		FROM account_row_counts WHERE resource = ? AND account_id = ?`, resource, account).Scan(ctx, &used, &inFlight); err != nil {
		return err
	}
	if used+inFlight < *limit {
		return nil
	}
	return ErrNear
}
