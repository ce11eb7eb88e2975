// Package tenancy holds who is calling: the Principal (a token and the
// account it belongs to), the API token format and its hashing, and the
// context helpers that carry a Principal through a request. It imports no
// other fleetapi package.
package tenancy

import (
	"time"
)

// AccountType is the place of an account in the tenancy tree
// (admin → manager → user → subaccount).
type AccountType string

// The account types of docs/design.md §2.
const (
	Admin      AccountType = "admin"
	Manager    AccountType = "manager"
	User       AccountType = "user"
	Subaccount AccountType = "subaccount"
)

// Valid reports whether t is one of the four account types.
func (t AccountType) Valid() bool {
	switch t {
	case Admin, Manager, User, Subaccount:
		return true
	}
	return false
}

// Account is the account a token belongs to, with every fact the policy reads.
type Account struct {
	ID       int64
	Username string
	Email    string
	Type     AccountType
	// ManagerID is the managing account (a subaccount's parent user); 0 when none.
	ManagerID     int64
	Active        bool
	ReadOnly      bool
	AccountExpire bool
	// ExpireDate is the day the account expires when AccountExpire is set;
	// the zero time when it has none.
	ExpireDate time.Time
	// Privileges are the subaccount privileges ("reports", "event_notifications").
	Privileges []string
	// RateLimit is the account's own budget in requests per minute, shared
	// by every token of the account and of its subaccounts (docs/design.md §12);
	// 0 when it has none.
	RateLimit int
	// Timezone is the account's IANA time zone name (docs/design.md §14).
	Timezone string
}

// Expired reports whether the account has expired on the given day: it is
// marked expiring and its expiry date is before that day.
func (a Account) Expired(today time.Time) bool {
	if !a.AccountExpire || a.ExpireDate.IsZero() {
		return false
	}
	y, m, d := today.Date()
	return a.ExpireDate.Before(time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
}

// Token is a stored API token, without its secret.
type Token struct {
	ID          int64
	AccountID   int64
	Name        string
	Permissions []string
	ExpiresAt   *time.Time
	RevokedAt   *time.Time
	LastUsedAt  *time.Time
	// RateLimit is the token's own limit in requests per minute; 0 means the
	// server default.
	RateLimit int
	// ParentID is the token that minted this one; 0 for none.
	ParentID  int64
	CreatedAt time.Time
}

// MaxTokenGeneration is how many minting ancestors a token may have: a
// token minted by a token minted by ... at most this many times from a
// token made by an operator (the command line or the import). A token of
// that generation mints no more (docs/design.md §9's attenuation: the policy's
// exceeds_token, field generation), so that the rate limit, which counts
// a request against its minting ancestors within the tenant
// (Principal.ChargedMinters), touches a bounded number of budgets.
const MaxTokenGeneration = 8

// Minter is a minting ancestor of a token, with what the rate limiter
// needs of it.
type Minter struct {
	ID int64
	// AccountID is the account the minter belongs to: the tenant whose
	// budget it is (Principal.ChargedMinters).
	AccountID int64
	// RateLimit is its own limit in requests per minute; 0: the server
	// default.
	RateLimit int
}

// Principal is an authenticated caller: a valid token, its account and the
// accounts above that account.
type Principal struct {
	Token   Token
	Account Account
	// Ancestors are the accounts above Account, nearest first: its manager
	// (a subaccount's parent user), that account's manager, and so on up to
	// the top of the tree (docs/design.md §2: their state flows down to Account).
	// Each account appears once, even if the stored manager links loop.
	// Privileges are not loaded for them.
	Ancestors []Account
	// AncestorsIncomplete is true when Ancestors could not be loaded whole:
	// a manager row is missing, the manager links loop, or there are more
	// accounts above than the fixed levels allow (docs/design.md §2). The policy
	// then denies every request (fail closed).
	AncestorsIncomplete bool
	// Minters are the tokens that minted Token, nearest first: its parent,
	// the parent's parent, and so on to a token made by an operator. A
	// request counts against Token's rate limit and those of the minters
	// within its tenant (ChargedMinters).
	Minters []Minter
	// MintersIncomplete is true when Minters could not be loaded whole (a
	// loop of parent links, or more than MaxTokenGeneration, both only
	// possible when written behind the API's back): the token is refused
	// (fail closed), since its requests could not be counted against every
	// minter.
	MintersIncomplete bool
	// FromStandby is true when the principal was read from a read replica
	// because the primary could not be reached (a fail-over, docs/design.md §13):
	// it is as fresh as the replica (within the replica lag bound) and is
	// neither cached nor has its last use recorded (that is a write).
	FromStandby bool
}

// TenantIDs are the accounts of p's tenant, whose budgets p's requests may
// spend (docs/decisions.md, "A limit never lets one tenant's traffic spend
// another tenant's budget"): p's own account and, for a subaccount, its
// parent user (the customer it belongs to, as for the account budget of
// docs/design.md §12). A subaccount whose parent is not loaded (an
// incomplete chain, which the policy denies anyway) has only its own.
func (p Principal) TenantIDs() []int64 {
	if p.Account.Type == Subaccount && len(p.Ancestors) > 0 && p.Ancestors[0].ID == p.Account.ManagerID {
		return []int64{p.Account.ID, p.Ancestors[0].ID}
	}
	return []int64{p.Account.ID}
}

// ChargedMinters are the minters whose rate-limit budgets a request of p
// spends besides its token's own: the nearest minters up to the first one
// that belongs to an account outside p's tenant (TenantIDs). So minting
// children never multiplies what one tenant is served (every child within
// the tenant shares its minters' budgets), and a token minted for another
// tenant (a reseller's token minting a customer's first token, an
// operator's a reseller's) never ties that tenant's traffic to the
// minter's budget: the lineage is charged only while it stays inside one
// tenant. A token minted across the boundary starts a tenant's own
// lineage; above it the chain belongs to someone else.
func (p Principal) ChargedMinters() []Minter {
	tenant := p.TenantIDs()
	for i, m := range p.Minters {
		if m.AccountID != tenant[0] && (len(tenant) < 2 || m.AccountID != tenant[1]) {
			return p.Minters[:i]
		}
	}
	return p.Minters
}
