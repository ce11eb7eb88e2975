package storage

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The quotas of an account as storage keeps them (package limits declares
// and checks them): the account's own overrides in its quota_* columns,
// the platform defaults of a Store, and the checks of the creates, which
// lock the account's row before limits counts its use.

// WithQuotas returns a Store over the same database whose platform default
// quotas are defaults (nil limits: unlimited).
func (s *Store) WithQuotas(defaults limits.Quotas) *Store {
	c := *s
	c.quotas = defaults
	return &c
}

// DefaultQuotas returns the platform default quotas of s.
func (s *Store) DefaultQuotas() limits.Quotas { return s.quotas }

// overrides returns the account's own quota overrides (nil: the default).
func (a Account) overrides() limits.Quotas {
	return limits.Quotas{Subaccounts: a.QuotaSubaccounts, Tokens: a.QuotaTokens, Devices: a.QuotaDevices, Passengers: a.QuotaPassengers, Webhooks: a.QuotaWebhooks, Zones: a.QuotaZones,
		Events: a.QuotaEvents}
}

// SetOverrides sets the account's quota overrides (nil: the platform
// default).
func (a *Account) SetOverrides(q limits.Quotas) {
	a.QuotaSubaccounts, a.QuotaTokens, a.QuotaDevices, a.QuotaPassengers, a.QuotaWebhooks, a.QuotaZones = q.Subaccounts, q.Tokens, q.Devices, q.Passengers, q.Webhooks, q.Zones
	a.QuotaEvents = q.Events
}

// Overrides returns the account's own quota overrides: nil where the
// platform default applies.
func (a Account) Overrides() limits.Quotas { return a.overrides() }

// EffectiveQuotas returns the limits in force for a with the platform
// defaults: its overrides, else the defaults; none for an admin
// (limits.Effective).
func EffectiveQuotas(a Account, defaults limits.Quotas) limits.Quotas {
	return limits.Effective(a.overrides(), a.Type == tenancy.Admin, defaults)
}

// lockedLimit locks the account's row with the row lock lock (FOR lock)
// and returns its limit of quota q in force (nil: unlimited).
func (s *Store) lockedLimit(ctx context.Context, db bun.IDB, account int64, q limits.Quota, lock string) (*int64, error) {
	var a Account
	if err := db.NewSelect().Model(&a).Where(accountsScope.col("id")+" = ?", account).For(lock).Scan(ctx); err != nil {
		return nil, err
	}
	return EffectiveQuotas(a, s.quotas).Get(q), nil
}

// AccountQuotas returns the quotas in force for the account a (EffectiveQuotas
// with the platform defaults) and how much of each it uses now.
func (s *Store) AccountQuotas(ctx context.Context, a Account) (limits.Quotas, limits.QuotaUsage, error) {
	u, err := limits.UsageOf(ctx, s.db, a.ID)
	if err != nil {
		return limits.Quotas{}, limits.QuotaUsage{}, Translate(err)
	}
	return EffectiveQuotas(a, s.quotas), u, nil
}

// QuotasOf returns the quota limits in force for the account id
// (EffectiveQuotas with the platform defaults): a caller's own, which the
// quotas it sets on others may not exceed (docs/design.md §12).
func (s *Store) QuotasOf(ctx context.Context, id int64) (limits.Quotas, error) {
	var a Account
	if err := s.db.NewSelect().Model(&a).Where(accountsScope.col("id")+" = ?", id).Scan(ctx); err != nil {
		return limits.Quotas{}, translateOwn(err)
	}
	return EffectiveQuotas(a, s.quotas), nil
}

// checkQuota locks the account's row (FOR NO KEY UPDATE, which every
// quota check takes, so that two wait for each other; it does not wait for
// the KEY SHARE locks that inserts referencing the account take; the
// create has already taken it in the first step of the lock order,
// docs/locking.md, so it waits for nothing here) and refuses, with a
// *limits.QuotaError, one more row of quota q when the account already uses its
// limit. It runs inside the create's transaction, before the insert.
func (s *Store) checkQuota(ctx context.Context, db bun.IDB, account int64, q limits.Quota) error {
	limit, err := s.lockedLimit(ctx, db, account, q, "NO KEY UPDATE")
	if err != nil {
		return err
	}
	return limits.Check(ctx, db, account, q, limit)
}

// checkQuotaShared is checkQuota for the hot creates of a counted quota
// (passengers, devices): it locks the account's row FOR SHARE and asks
// limits.CheckShared, which answers limits.ErrNear for an account within
// reach of its limit (the reasoning is there).
func (s *Store) checkQuotaShared(ctx context.Context, db bun.IDB, account int64, q limits.Quota) error {
	limit, err := s.lockedLimit(ctx, db, account, q, "SHARE")
	if err != nil {
		return err
	}
	return limits.CheckShared(ctx, db, account, q, limit)
}
