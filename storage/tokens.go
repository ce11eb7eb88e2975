package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/tenancy"
)

// PrincipalByTokenHash returns the token stored under hash with its account
// and the accounts above it, in one query; found is false when there is
// none. Revoked and expired tokens, and accounts in any state, are returned
// as they are: judging them is the caller's (and the policy's) job. It
// reads the primary; while the primary cannot be reached (a fail-over), a
// usable read replica, and the principal is then marked FromStandby. It
// returns ErrUnavailable when neither can be reached.
func (s *Store) PrincipalByTokenHash(ctx context.Context, hash tenancy.TokenHash) (tenancy.Principal, bool, error) {
	var (
		p     tenancy.Principal
		found bool
	)
	err := s.readPrimaryFirst(ctx, func(ctx context.Context, st *Store) error {
		row := new(principalRow)
		err := st.principalQuery(row).Where("t.hash = ?", hash[:]).Limit(1).Scan(ctx)
		if err != nil {
			err = translateOwn(err)
			if errors.Is(err, ErrNotFound) {
				found = false
				return nil
			}
			return err
		}
		p, found = row.principal(), true
		p.FromStandby = st != s
		return nil
	})
	if err != nil || !found {
		return tenancy.Principal{}, false, err
	}
	return p, true, nil
}

// TouchToken sets the token's last_used_at to now unless it was set less
// than tenancy.TouchInterval before now, so that a busy token is written at
// most once a minute. An unknown id is not an error. It returns
// ErrUnavailable when the database cannot be reached.
func (s *Store) TouchToken(ctx context.Context, tokenID int64, now time.Time) error {
	_, err := s.db.NewUpdate().Model((*Token)(nil)).
		Set("last_used_at = ?", now).
		Where("id = ?", tokenID).
		Where("last_used_at IS NULL OR last_used_at <= ?", now.Add(-tenancy.TouchInterval)).
		Exec(ctx)
	return translateOwn(err)
}

// NewToken describes a token to create.
type NewToken struct {
	// Username is the account the token belongs to.
	Username string
	// Name is unique per account; a generated one when empty.
	Name string
	// Permissions follow the grammar of tenancy.ValidatePermission.
	Permissions []string
	// ExpiresAt is when the token stops working; nil for never.
	ExpiresAt *time.Time
	// RateLimit is requests per minute; 0 for the server default.
	RateLimit int
}

// CreateToken creates a token with a fresh secret and stores only its hash.
// It returns the secret, to be shown once, and the stored token. It returns
// ErrNotFound for an unknown account, ErrInvalid for a permission outside
// the grammar or matching no route, a negative rate limit or an expiry in
// the past, ErrConflict when the account already has a token of that name,
// and ErrUnavailable when the database cannot be reached; the errors are
// worded for the operator (`a token named "ops" already exists for acme`).
func (s *Store) CreateToken(ctx context.Context, nt NewToken) (string, tenancy.Token, error) {
	if err := ValidateNewToken(nt.Permissions, nt.ExpiresAt, nt.RateLimit, time.Now()); err != nil {
		return "", tenancy.Token{}, err
	}
	acct, err := s.accountByUsername(ctx, s.db, nt.Username)
	if err != nil {
		return "", tenancy.Token{}, err
	}
	secret, tok, err := newTokenRow(acct.ID, nt.Name, nt.Permissions, nt.ExpiresAt, nt.RateLimit)
	if err != nil {
		return "", tenancy.Token{}, err
	}
	// The account first (KEY SHARE, docs/locking.md): one erased since it
	// was read is "not found", not a foreign key's refusal.
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := (accountLocks{acct.ID: forKeyShare}).lock(ctx, tx); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(tok).Returning("*").Exec(ctx)
		return err
	})
	if err = Translate(err); errors.Is(err, ErrNotFound) {
		return "", tenancy.Token{}, worded(ErrNotFound, err, "account %q not found", nt.Username)
	} else if errors.Is(err, ErrConflict) {
		// The only unique key a fresh secret can meet is (account, name).
		return "", tenancy.Token{}, worded(ErrConflict, err, "a token named %q already exists for %s", tok.Name, nt.Username)
	} else if err != nil {
		return "", tenancy.Token{}, fmt.Errorf("token %q: %w", tok.Name, err)
	}
	return secret, tok.Tenancy(), nil
}

// ListTokens returns the tokens of an account, revoked ones included, oldest
// first. It returns ErrNotFound for an unknown account and ErrUnavailable
// when the database cannot be reached.
func (s *Store) ListTokens(ctx context.Context, username string) ([]tenancy.Token, error) {
	acct, err := s.accountByUsername(ctx, s.db, username)
	if err != nil {
		return nil, err
	}
	var rows []Token
	if err := s.db.NewSelect().Model(&rows).Where("t.account_id = ?", acct.ID).Order("t.id").Scan(ctx); err != nil {
		return nil, Translate(err)
	}
	out := make([]tenancy.Token, len(rows))
	for i, r := range rows {
		out[i] = r.Tenancy()
	}
	return out, nil
}

// RevokeToken marks a token revoked, with its heirs (the trigger
// tokens_revoke_heirs), after locking what that changes in the lock order
// of every write (docs/locking.md: the token's account, its heirs'
// accounts, then the tokens), and returns once every replica's
// authentication cache refuses it (authsync.AwaitAcks). Revoking a revoked
// token again does nothing and keeps the first revocation time. It
// returns ErrNotFound for an unknown id (or one erased meanwhile) and
// ErrUnavailable when the database cannot be reached.
func (s *Store) RevokeToken(ctx context.Context, id int64) error {
	err := s.revocation(ctx, id, func(lin lineage, last bool) error {
		return s.writeInTx(ctx, func(ctx context.Context, tx bun.Tx) (bool, error) {
			if err := lin.heirLocks().with(forNoKeyUpdate, lin.account).lock(ctx, tx); err != nil {
				return false, err
			}
			if err := lin.lockTokens(ctx, tx, last); err != nil {
				return false, err
			}
			if _, err := tx.NewUpdate().Model((*Token)(nil)).Set("revoked_at = COALESCE(revoked_at, now())").
				Where("id = ?", id).Exec(ctx); err != nil {
				return false, err
			}
			return true, nil
		})
	})
	if errors.Is(err, ErrNotFound) {
		return worded(ErrNotFound, err, "token %d not found", id)
	}
	return Translate(err)
}
