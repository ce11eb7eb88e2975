package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Account is a row of accounts: one node of the tenancy tree (docs/design.md §2).
// Its JSON form is the managed account of docs/design.md §9 (real booleans,
// manager_id and account_expire_dt null when unset).
type Account struct {
	bun.BaseModel `bun:"table:accounts,alias:a"`

	ID       int64               `bun:"id,pk,autoincrement" json:"id"`
	Username string              `bun:"username,notnull" json:"username" list:"sort,search=1"`
	Email    string              `bun:"email,notnull" json:"email" list:"search=2"`
	Type     tenancy.AccountType `bun:"type,notnull" json:"type" list:"sort,filter"`
	// ManagerID is the managing account (a subaccount's parent user).
	ManagerID       *int64     `bun:"manager_id" json:"manager_id" list:"filter"`
	Active          bool       `bun:"active,notnull" json:"active" list:"filter"`
	ReadOnly        bool       `bun:"read_only,notnull" json:"read_only" list:"filter"`
	AccountExpire   bool       `bun:"account_expire,notnull" json:"account_expire"`
	AccountExpireDt *Date      `bun:"account_expire_dt,type:date" json:"account_expire_dt"`
	Privileges      StringList `bun:"privileges,array,notnull" json:"privileges"`
	// RateLimit is the account's budget in requests per minute, shared by
	// every token of the account and of its subaccounts (docs/design.md §12); nil:
	// none.
	RateLimit *int `bun:"rate_limit" json:"rate_limit"`
	// Timezone is the IANA name in which the account's event rules read
	// week_days and day_time (docs/design.md §14; ValidTimezone).
	Timezone  string    `bun:"timezone,nullzero,notnull,default:'UTC'" json:"timezone"`
	CreatedAt time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp" json:"created_at" list:"sort"`
	// The account's quota overrides (docs/design.md §12; nil: the platform
	// default). The wire shows the limits in force (Quotas) instead.
	QuotaSubaccounts *int64 `bun:"quota_subaccounts" json:"-"`
	QuotaTokens      *int64 `bun:"quota_tokens" json:"-"`
	QuotaDevices     *int64 `bun:"quota_devices" json:"-"`
	QuotaPassengers  *int64 `bun:"quota_passengers" json:"-"`
	QuotaWebhooks    *int64 `bun:"quota_webhooks" json:"-"`
	QuotaZones       *int64 `bun:"quota_zones" json:"-"`
	QuotaEvents      *int64 `bun:"quota_events" json:"-"`
	// Quotas and Usage are the limits in force and their current use,
	// shown by GET and PATCH /accounts/{id} only (nil elsewhere).
	Quotas *limits.Quotas     `bun:"-" json:"quotas,omitempty"`
	Usage  *limits.QuotaUsage `bun:"-" json:"usage,omitempty"`
}

var _ bun.BeforeAppendModelHook = (*Account)(nil)

// BeforeAppendModel writes a nil privilege list as the empty array.
func (a *Account) BeforeAppendModel(context.Context, bun.Query) error {
	a.Privileges = a.Privileges.orEmpty()
	return nil
}

// Tenancy returns the account as the tenancy package sees it.
func (a Account) Tenancy() tenancy.Account {
	t := tenancy.Account{
		ID:            a.ID,
		Username:      a.Username,
		Email:         a.Email,
		Type:          a.Type,
		Active:        a.Active,
		ReadOnly:      a.ReadOnly,
		AccountExpire: a.AccountExpire,
		Privileges:    []string(a.Privileges.orEmpty()),
		ManagerID:     orZero(a.ManagerID),
		RateLimit:     orZero(a.RateLimit),
		Timezone:      a.Timezone,
	}
	if a.AccountExpireDt != nil {
		t.ExpireDate = a.AccountExpireDt.Time
	}
	return t
}

// orZero returns *p, or the zero value of T when p is nil: a nullable
// column as a type without null sees it.
func orZero[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
