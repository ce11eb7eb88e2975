package storage

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/tenancy"
)

// importTokens stores the tokens, hashed; a token name that exists for its
// account is skipped.
func (im *importer) importTokens(ctx context.Context, f *importFile) error {
	for _, r := range f.Tokens {
		t, ref := r.val, r.ref
		if t.Account == "" {
			return ref.errorf("account is required")
		}
		acct, ok, err := im.lookupAccount(ctx, t.Account)
		if err != nil {
			return ref.dbError(err)
		}
		if !ok {
			return ref.errorf("unknown account %q", t.Account)
		}
		if t.Name == "" {
			return ref.errorf("name is required")
		}
		hash, err := tenancy.HashToken(t.Secret)
		if err != nil {
			return ref.errorf("secret: want %s followed by 32 base62 characters", tenancy.TokenPrefix)
		}
		if err := ValidatePermissions(t.Permissions); err != nil {
			return ref.errorf("%v", err)
		}
		if t.RateLimit != nil && *t.RateLimit <= 0 {
			return ref.errorf("rate_limit must be 1 or more, or null")
		}
		found, err := im.exists(ctx, ref, (*Token)(nil), func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("t.account_id = ? AND t.name = ?", acct.ID, t.Name)
		})
		if err != nil {
			return err
		}
		if found {
			im.res.Tokens.Skipped++
			continue
		}
		row := &Token{
			AccountID:   acct.ID,
			Name:        t.Name,
			Hash:        hash[:],
			Permissions: StringList(t.Permissions),
			ExpiresAt:   t.ExpiresAt,
			RateLimit:   t.RateLimit,
		}
		if err := im.insert(ctx, ref, row); err != nil {
			return err
		}
		im.res.Tokens.Inserted++
	}
	return nil
}
