package importfile

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
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
		if err := tenancy.ValidatePermissions(t.Permissions); err != nil {
			return ref.errorf("%v", err)
		}
		if t.RateLimit != nil && *t.RateLimit <= 0 {
			return ref.errorf("rate_limit must be 1 or more, or null")
		}
		found, err := im.exists(ctx, ref, (*storage.Token)(nil), func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("t.account_id = ? AND t.name = ?", acct.ID, t.Name)
		})
		if err != nil {
			return err
		}
		if found {
			im.res.Tokens.Skipped++
			continue
		}
		// The secret is unique too: say so instead of the constraint's name.
		var owner struct {
			Username string `bun:"username"`
			Name     string `bun:"name"`
		}
		err = im.db.NewSelect().TableExpr("tokens AS t").Join("JOIN accounts AS a ON a.id = t.account_id").
			ColumnExpr("a.username, t.name").Where("t.hash = ?", hash[:]).Limit(1).Scan(ctx, &owner)
		switch err = storage.Translate(err); {
		case err == nil:
			return ref.errorf("secret is already the secret of token %q of %s; every token needs its own", owner.Name, owner.Username)
		case !errors.Is(err, storage.ErrNotFound):
			return ref.dbError(err)
		}
		row := &storage.Token{
			AccountID:   acct.ID,
			Name:        t.Name,
			Hash:        hash[:],
			Permissions: storage.StringList(t.Permissions),
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
