package importfile

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The tokens apply after the grants; any account, a subaccount too, may
// hold them.
var _ = declareSection(spec[importToken]{name: "tokens", after: "grants", key: []string{"account", "name"}, load: loadToken, dump: dumpTokens})

// importToken is a record of the tokens section. A token comes with its
// secret in the token format of docs/design.md §3, stored hashed, or with the
// hash itself (secret_hash: the 64 hex digits of the SHA-256 of the
// secret, as an export writes it, so that the tokens of an exported
// tenant keep working once imported; the secret itself is never stored
// and cannot be exported). Parent names the token that minted it (token
// lineage, docs/design.md §9): it must come earlier in the file or exist. The
// times, when set, keep an exported token's state.
type importToken struct {
	Account     string     `json:"account"`
	Name        string     `json:"name"`
	Secret      string     `json:"secret,omitempty"`
	SecretHash  string     `json:"secret_hash,omitempty"`
	Permissions []string   `json:"permissions"`
	ExpiresAt   *time.Time `json:"expires_at"`
	RateLimit   *int       `json:"rate_limit"`
	Parent      *tokenRef  `json:"parent,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
	LastUsedAt  *time.Time `json:"last_used_at,omitempty"`
	CreatedAt   *time.Time `json:"created_at,omitempty"`
}

// tokenRef names a token by its natural key: its account and its name.
type tokenRef struct {
	Account string `json:"account"`
	Name    string `json:"name"`
}

// tokenHash returns the hash a token record stores: that of its secret,
// or its secret_hash; exactly one of them must be given.
func tokenHash(ref recordRef, t importToken) ([]byte, error) {
	switch {
	case t.Secret != "" && t.SecretHash != "":
		return nil, ref.errorf("give the secret or its secret_hash, not both")
	case t.SecretHash != "":
		h, err := hex.DecodeString(t.SecretHash)
		if err != nil || len(h) != 32 {
			return nil, ref.errorf("secret_hash: want the 64 hex digits of the SHA-256 of the secret")
		}
		return h, nil
	}
	hash, err := tenancy.HashToken(t.Secret)
	if err != nil {
		return nil, ref.errorf("secret: want %s followed by 32 base62 characters", tenancy.TokenPrefix)
	}
	return hash[:], nil
}

// loadToken stores a token, hashed; a token name that exists for its
// account is skipped.
func loadToken(ctx context.Context, im *importer, ref recordRef, t importToken) (bool, error) {
	acct, err := im.account(ctx, ref, t.Account)
	if err != nil {
		return false, err
	}
	if t.Name == "" {
		return false, ref.errorf("name is required")
	}
	hash, err := tokenHash(ref, t)
	if err != nil {
		return false, err
	}
	if err := tenancy.ValidatePermissions(t.Permissions); err != nil {
		return false, ref.errorf("%v", err)
	}
	if t.RateLimit != nil && *t.RateLimit <= 0 {
		return false, ref.errorf("rate_limit must be 1 or more, or null")
	}
	if found, err := im.exists(ctx, ref, (*storage.Token)(nil), "t.account_id = ? AND t.name = ?", acct.ID, t.Name); err != nil || found {
		return false, err
	}
	// The secret is unique too: say so instead of the constraint's name.
	var owner struct {
		Username string `bun:"username"`
		Name     string `bun:"name"`
	}
	err = im.db.NewSelect().TableExpr("tokens AS t").Join("JOIN accounts AS a ON a.id = t.account_id").
		ColumnExpr("a.username, t.name").Where("t.hash = ?", hash).Limit(1).Scan(ctx, &owner)
	switch err = storage.Translate(err); {
	case err == nil:
		return false, ref.errorf("secret is already the secret of token %q of %s; every token needs its own", owner.Name, owner.Username)
	case !errors.Is(err, storage.ErrNotFound):
		return false, ref.dbError(err)
	}
	row := &storage.Token{
		AccountID:   acct.ID,
		Name:        t.Name,
		Hash:        hash,
		Permissions: storage.StringList(t.Permissions),
		ExpiresAt:   t.ExpiresAt,
		RateLimit:   t.RateLimit,
		RevokedAt:   t.RevokedAt,
		LastUsedAt:  t.LastUsedAt,
	}
	if t.CreatedAt != nil {
		row.CreatedAt = *t.CreatedAt
	}
	if t.Parent != nil {
		parent, err := im.account(ctx, ref, t.Parent.Account)
		if err != nil {
			return false, err
		}
		var p storage.Token
		err = storage.Translate(im.db.NewSelect().Model(&p).Column("id", "revoked_at").
			Where("t.account_id = ? AND t.name = ?", parent.ID, t.Parent.Name).Scan(ctx))
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return false, ref.errorf("unknown parent token %q of %s: a parent comes before the tokens it minted", t.Parent.Name, t.Parent.Account)
		case err != nil:
			return false, ref.dbError(err)
		case p.RevokedAt != nil && t.RevokedAt == nil:
			return false, ref.errorf("parent token %q of %s is revoked: a token minted from it is revoked too (revoked_at)", t.Parent.Name, t.Parent.Account)
		}
		row.ParentTokenID = &p.ID
	}
	return true, im.insert(ctx, ref, row)
}

// dumpTokens writes the subtree's tokens in id order, so that a parent
// comes before the tokens it minted, each with the hash of its secret; a
// parent outside the subtree is not written.
func dumpTokens(ctx context.Context, ex *exporter, emit func(importToken) error) error {
	return eachRow(ctx, ex, "id", "t.account_id = ANY(?)", func(t *storage.Token) int64 { return t.ID }, func(t *storage.Token) error {
		ref := tokenRef{Account: ex.names[t.AccountID], Name: t.Name}
		rec := importToken{
			Account: ref.Account, Name: t.Name, SecretHash: hex.EncodeToString(t.Hash), Permissions: t.Permissions,
			ExpiresAt: t.ExpiresAt, RateLimit: t.RateLimit, RevokedAt: t.RevokedAt, LastUsedAt: t.LastUsedAt, CreatedAt: &t.CreatedAt,
		}
		if rec.Permissions == nil {
			rec.Permissions = []string{}
		}
		if t.ParentTokenID != nil {
			if p, ok := ex.tokens[*t.ParentTokenID]; ok {
				rec.Parent = &p
			}
		}
		ex.tokens[t.ID] = ref
		return emit(rec)
	})
}
