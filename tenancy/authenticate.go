package tenancy

import (
	"context"
	"errors"
	"time"
)

// Authentication failures. The api package maps each to its 401 code.
var (
	// ErrNoCredentials: the request carries no Authorization header.
	ErrNoCredentials = errors.New("authorization header missing")
	// ErrInvalidToken: the token is malformed, unknown or revoked.
	ErrInvalidToken = errors.New("invalid token")
	// ErrTokenExpired: the token is past its expires_at.
	ErrTokenExpired = errors.New("token expired")
)

// TouchInterval is how stale last_used_at may become before a use updates it.
const TouchInterval = time.Minute

// TokenStore is what authentication needs from the database.
type TokenStore interface {
	// PrincipalByTokenHash returns the token stored under hash with its
	// account; found is false when there is none.
	PrincipalByTokenHash(ctx context.Context, hash TokenHash) (p Principal, found bool, err error)
	// TouchToken sets the token's last_used_at to now unless it was set less
	// than TouchInterval before.
	TouchToken(ctx context.Context, tokenID int64, now time.Time) error
}

// Authenticator turns an Authorization header into a Principal.
type Authenticator struct {
	Store TokenStore
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Authenticate verifies the Authorization header value and returns its
// Principal. It returns ErrNoCredentials, ErrInvalidToken or ErrTokenExpired
// for a caller that is not authenticated, and the store's error otherwise.
// The account's state (inactive, expired) is not judged here: that is the
// policy's decision.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (Principal, error) {
	if header == "" {
		return Principal{}, ErrNoCredentials
	}
	secret, err := TokenFromHeader(header) // checks the format, once
	if err != nil {
		return Principal{}, ErrInvalidToken
	}
	p, found, err := a.Store.PrincipalByTokenHash(ctx, hashOf(secret))
	if err != nil {
		return Principal{}, err
	}
	if !found || p.Token.RevokedAt != nil {
		return Principal{}, ErrInvalidToken
	}
	now := a.now()
	if p.Token.ExpiresAt != nil && !now.Before(*p.Token.ExpiresAt) {
		return Principal{}, ErrTokenExpired
	}
	if p.Token.LastUsedAt == nil || now.Sub(*p.Token.LastUsedAt) >= TouchInterval {
		if err := a.Store.TouchToken(ctx, p.Token.ID, now); err != nil {
			return Principal{}, err
		}
	}
	return p, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
