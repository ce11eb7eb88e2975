package storage

import (
	"context"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// managedRow is an account with the accounts above it, nearest first.
type managedRow struct {
	Account   `bun:",extend"`
	Ancestors ancestorList `bun:"ancestors,scanonly"`
}

// managedAncestors is ancestorsColumn over the accounts table's own alias.
var managedAncestors = strings.ReplaceAll(ancestorsColumn, `"account".`, `"`+accountsScope.alias+`".`)

// ManagedAccount returns the account id of the management scope with the
// accounts above it, nearest first, and whether that chain is whole
// (wholeChain): the target of a management decision,
// policy.NewTargetInput. An account outside the scope is ErrNotFound,
// exactly like one that does not exist.
func (s *Store) ManagedAccount(ctx context.Context, scope policy.Scope, id int64) (Account, []tenancy.Account, bool, error) {
	row := new(managedRow)
	q, err := s.scopedSelect(scope, accountsScope, row)
	if err != nil {
		return Account{}, nil, false, err
	}
	err = q.ColumnExpr(`"`+accountsScope.alias+`".*`).ColumnExpr(managedAncestors).
		Where(accountsScope.col("id")+" = ?", id).Scan(ctx)
	if err != nil {
		return Account{}, nil, false, translateOwn(err)
	}
	var up []tenancy.Account
	for _, a := range row.Ancestors {
		up = append(up, a.Tenancy())
	}
	return row.Account, up, wholeChain(row.Account.ManagerID, row.Ancestors), nil
}

// accountAudit is the audited form of an account's fields: what
// account.create and account.update record, its quota overrides included
// (nil: the platform default).
func accountAudit(a Account) map[string]any {
	var manager, dt, rate any
	if a.ManagerID != nil {
		manager = *a.ManagerID
	}
	if a.RateLimit != nil {
		rate = *a.RateLimit
	}
	if a.AccountExpireDt != nil {
		dt = a.AccountExpireDt.String()
	}
	return map[string]any{
		"username": a.Username, "email": a.Email, "type": string(a.Type), "manager_id": manager,
		"active": a.Active, "read_only": a.ReadOnly, "account_expire": a.AccountExpire,
		"account_expire_dt": dt, "privileges": []string(a.Privileges.orEmpty()), "rate_limit": rate,
		"quotas": a.overrides().Map(), "timezone": a.Timezone,
	}
}

// CreateAccount stores a new account a (account.create, docs/design.md §9) in one
// transaction with its audit row: its manager, when it has one, must be in
// scope, the caller's management scope (ErrNotFound otherwise). The policy
// has already allowed the creation. With idem, a retry with the same
// request returns the first response (replayed) and writes nothing; with
// another request it is ErrIdempotencyKeyReused. A duplicate username is
// ErrConflict.
func (s *Store) CreateAccount(ctx context.Context, scope policy.Scope, actor Actor, a Account, idem *IdempotentRequest) (created Account, replayed bool, err error) {
	if _, err := s.compiledFor(scope, accountsScope); err != nil {
		return Account{}, false, err
	}
	a.ID, a.CreatedAt = 0, time.Time{}
	w := ManagementWrite{Actor: actor, Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
		if a.ManagerID != nil {
			if err := s.checkQuota(ctx, tx.db, *a.ManagerID, limits.QuotaSubaccounts); err != nil {
				return audit.Event{}, err
			}
		}
		if _, err := tx.db.NewInsert().Model(&a).Returning("*").Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		created = a
		return audit.New(policy.ActionAccountCreate, a.ID, a.ID, nil, accountAudit(a))
	}}
	if a.ManagerID != nil {
		w.Accounts = []int64{*a.ManagerID}
	}
	if replayed, err = idempotentManage(ctx, s, scope, w, idem, &created); err != nil {
		return Account{}, false, err
	}
	return created, replayed, nil
}

// AccountPatch is an account.update: the fields to set (nil: unchanged).
type AccountPatch struct {
	Email         *string
	Active        *bool
	ReadOnly      *bool
	AccountExpire *bool
	// SetExpireDt says that AccountExpireDt is asked for (nil clears it).
	SetExpireDt     bool
	AccountExpireDt *Date
	Privileges      *StringList
	// SetRateLimit says that RateLimit is asked for (nil clears it).
	SetRateLimit bool
	RateLimit    *int
	// Quotas are the quota overrides asked for: a nil value returns the
	// quota to the platform default.
	Quotas map[limits.Quota]*int64
	// Timezone is the account's new time zone (nil: unchanged), an IANA
	// name the API validated (ValidTimezone).
	Timezone *string
}

// UpdateAccount applies patch to the account id (account.update, docs/design.md
// §9) in one transaction with its audit row, which records exactly the
// fields whose value changed. The account must be in scope (ErrNotFound
// otherwise); the policy has already allowed the change.
func (s *Store) UpdateAccount(ctx context.Context, scope policy.Scope, actor Actor, id int64, patch AccountPatch) (Account, error) {
	var updated Account
	_, err := s.ManageInTx(ctx, scope, ManagementWrite{Accounts: []int64{id}, Actor: actor,
		Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
			a := Account{}
			if err := tx.db.NewSelect().Model(&a).Where(accountsScope.col("id")+" = ?", id).Scan(ctx); err != nil {
				return audit.Event{}, err
			}
			before := accountAudit(a)
			if patch.Email != nil {
				a.Email = *patch.Email
			}
			if patch.Active != nil {
				a.Active = *patch.Active
			}
			if patch.ReadOnly != nil {
				a.ReadOnly = *patch.ReadOnly
			}
			if patch.AccountExpire != nil {
				a.AccountExpire = *patch.AccountExpire
			}
			if patch.SetExpireDt {
				a.AccountExpireDt = patch.AccountExpireDt
			}
			if patch.Privileges != nil {
				a.Privileges = *patch.Privileges
			}
			if patch.SetRateLimit {
				a.RateLimit = patch.RateLimit
			}
			if patch.Timezone != nil {
				a.Timezone = *patch.Timezone
			}
			q := a.overrides()
			for name, v := range patch.Quotas {
				q.Set(name, v)
			}
			a.SetOverrides(q)
			after := accountAudit(a)
			changes, err := audit.Diff(before, after)
			if err != nil {
				return audit.Event{}, err
			}
			if len(changes) > 0 {
				if _, err := tx.db.NewUpdate().Model(&a).
					Column("email", "active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit",
						"quota_subaccounts", "quota_tokens", "quota_devices", "quota_passengers", "quota_webhooks", "quota_zones", "quota_events", "timezone").
					WherePK().Exec(ctx); err != nil {
					return audit.Event{}, err
				}
			}
			updated = a
			return audit.Event{Action: policy.ActionAccountUpdate, TargetAccountID: id, TargetID: id, Changes: changes}, nil
		}})
	if err != nil {
		return Account{}, err
	}
	return updated, nil
}
