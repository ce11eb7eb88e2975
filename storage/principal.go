package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/tenancy"
)

// PrincipalByTokenID returns the token with the given id and its account,
// whatever the token's state (for `fleetapi policy explain`). It returns
// ErrNotFound when there is none and ErrUnavailable when the database cannot
// be reached.
func (s *Store) PrincipalByTokenID(ctx context.Context, id int64) (tenancy.Principal, error) {
	row := new(Token)
	if err := s.db.NewSelect().Model(row).Relation("Account").Where("t.id = ?", id).Scan(ctx); err != nil {
		return tenancy.Principal{}, Translate(err)
	}
	return tenancy.Principal{Token: row.Tenancy(), Account: row.Account.Tenancy()}, nil
}
