package storage

import (
	"context"
	"errors"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/tenancy"
)

// Store is fleetapi's data access over one database handle. Its methods
// return errors passed through Translate, so that callers test them with
// errors.Is against ErrNotFound, ErrConflict, ErrInvalid and ErrUnavailable.
type Store struct {
	db bun.IDB
}

// NewStore returns a Store over db: a *bun.DB, or a bun.Tx to run its
// methods inside a caller's transaction.
func NewStore(db bun.IDB) *Store {
	return &Store{db: db}
}

var _ tenancy.TokenStore = (*Store)(nil)

// Ping checks that the database answers. It returns ErrUnavailable when it
// cannot be reached.
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "SELECT 1")
	return translateOwn(err)
}

// AccountByUsername returns the account with that username. It returns
// ErrNotFound (`account "x" not found`) when there is none and
// ErrUnavailable when the database cannot be reached.
func (s *Store) AccountByUsername(ctx context.Context, username string) (tenancy.Account, error) {
	a, err := s.accountByUsername(ctx, s.db, username)
	if err != nil {
		return tenancy.Account{}, err
	}
	return a.Tenancy(), nil
}

func (s *Store) accountByUsername(ctx context.Context, db bun.IDB, username string) (*Account, error) {
	a := new(Account)
	if err := db.NewSelect().Model(a).Where("a.username = ?", username).Scan(ctx); err != nil {
		if err = Translate(err); errors.Is(err, ErrNotFound) {
			return nil, worded(ErrNotFound, err, "account %q not found", username)
		}
		return nil, err
	}
	return a, nil
}
