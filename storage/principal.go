package storage

import (
	"context"
	"errors"

	"github.com/fleetapi/fleetapi/tenancy"
)

// PrincipalByTokenID returns the token with the given id and its account,
// whatever the token's state (for `fleetapi policy explain`). It returns
// ErrNotFound when there is none and ErrUnavailable when the database cannot
// be reached.
func (s *Store) PrincipalByTokenID(ctx context.Context, id int64) (tenancy.Principal, error) {
	row := new(Token)
	if err := s.db.NewSelect().Model(row).Relation("Account").Where("t.id = ?", id).Scan(ctx); err != nil {
		if err = Translate(err); errors.Is(err, ErrNotFound) {
			return tenancy.Principal{}, worded(ErrNotFound, err, "token %d not found", id)
		}
		return tenancy.Principal{}, err
	}
	return tenancy.Principal{Token: row.Tenancy(), Account: row.Account.Tenancy()}, nil
}
