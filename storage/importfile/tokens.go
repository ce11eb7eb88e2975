package importfile

import (
	"context"
	"errors"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// The tokens apply after the grants; any account, a subaccount too, may
// hold them.
var _ = declareSection(spec[importToken]{name: "tokens", after: "grants", key: []string{"account", "name"}, load: loadToken})

// importToken is a record of the tokens section: the secret in the token
// format of DESIGN §3, stored hashed.
type importToken struct {
	Account     string     `json:"account"`
	Name        string     `json:"name"`
	Secret      string     `json:"secret"`
	Permissions []string   `json:"permissions"`
	ExpiresAt   *time.Time `json:"expires_at"`
	RateLimit   *int       `json:"rate_limit"`
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
	hash, err := tenancy.HashToken(t.Secret)
	if err != nil {
		return false, ref.errorf("secret: want %s followed by 32 base62 characters", tenancy.TokenPrefix)
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
		ColumnExpr("a.username, t.name").Where("t.hash = ?", hash[:]).Limit(1).Scan(ctx, &owner)
	switch err = storage.Translate(err); {
	case err == nil:
		return false, ref.errorf("secret is already the secret of token %q of %s; every token needs its own", owner.Name, owner.Username)
	case !errors.Is(err, storage.ErrNotFound):
		return false, ref.dbError(err)
	}
	row := &storage.Token{
		AccountID:   acct.ID,
		Name:        t.Name,
		Hash:        hash[:],
		Permissions: storage.StringList(t.Permissions),
		ExpiresAt:   t.ExpiresAt,
		RateLimit:   t.RateLimit,
	}
	return true, im.insert(ctx, ref, row)
}
