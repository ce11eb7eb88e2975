package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/tenancy"
)

// Token is a row of tokens: an API token stored by the SHA-256 hash of its
// secret (docs/design.md §3).
type Token struct {
	bun.BaseModel `bun:"table:tokens,alias:t"`

	ID          int64      `bun:"id,pk,autoincrement"`
	AccountID   int64      `bun:"account_id,notnull"`
	Name        string     `bun:"name,notnull"`
	Hash        []byte     `bun:"hash,notnull"`
	Permissions StringList `bun:"permissions,array,notnull"`
	ExpiresAt   *time.Time `bun:"expires_at"`
	RevokedAt   *time.Time `bun:"revoked_at"`
	LastUsedAt  *time.Time `bun:"last_used_at"`
	// RateLimit is requests per minute; nil for the server default.
	RateLimit *int `bun:"rate_limit"`
	// ParentTokenID is the token that minted this one (POST /tokens); nil
	// for a token made by the command line or the import.
	ParentTokenID *int64    `bun:"parent_token_id"`
	CreatedAt     time.Time `bun:"created_at,nullzero,notnull,default:current_timestamp"`

	// Account is the owning account, loaded with Relation("Account").
	Account *Account `bun:"rel:belongs-to,join:account_id=id"`
}

var _ bun.BeforeAppendModelHook = (*Token)(nil)

// BeforeAppendModel writes a nil permission list as the empty array.
func (t *Token) BeforeAppendModel(context.Context, bun.Query) error {
	t.Permissions = t.Permissions.orEmpty()
	return nil
}

// Tenancy returns the token as the tenancy package sees it.
func (t Token) Tenancy() tenancy.Token {
	return tenancy.Token{
		ID:          t.ID,
		AccountID:   t.AccountID,
		Name:        t.Name,
		Permissions: []string(t.Permissions.orEmpty()),
		ExpiresAt:   t.ExpiresAt,
		RevokedAt:   t.RevokedAt,
		LastUsedAt:  t.LastUsedAt,
		CreatedAt:   t.CreatedAt,
		RateLimit:   orZero(t.RateLimit),
		ParentID:    orZero(t.ParentTokenID),
	}
}
