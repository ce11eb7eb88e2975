package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/tenancy"
)

// Account is a row of accounts: one node of the tenancy tree (DESIGN §2).
type Account struct {
	bun.BaseModel `bun:"table:accounts,alias:a"`

	ID       int64               `bun:"id,pk,autoincrement"`
	Username string              `bun:"username,notnull"`
	Email    string              `bun:"email,notnull"`
	Type     tenancy.AccountType `bun:"type,notnull"`
	// ManagerID is the managing account (a subaccount's parent user).
	ManagerID       *int64     `bun:"manager_id"`
	Active          bool       `bun:"active,notnull"`
	ReadOnly        bool       `bun:"read_only,notnull"`
	AccountExpire   bool       `bun:"account_expire,notnull"`
	AccountExpireDt *Date      `bun:"account_expire_dt,type:date"`
	Privileges      StringList `bun:"privileges,array,notnull"`
	CreatedAt       time.Time  `bun:"created_at,nullzero,notnull,default:current_timestamp"`
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
	}
	if a.ManagerID != nil {
		t.ManagerID = *a.ManagerID
	}
	if a.AccountExpireDt != nil {
		t.ExpireDate = a.AccountExpireDt.Time
	}
	return t
}
