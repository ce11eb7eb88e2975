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
	// Cache, when not nil, holds the principals of recent tokens so that
	// authenticating them needs no database round trip while the cache is
	// trusted (see PrincipalCache).
	Cache *PrincipalCache
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Invalidated returns a channel closed by the cache's next invalidation
// (PrincipalCache.Changed), or nil (a channel that never fires) without a
// cache.
func (a *Authenticator) Invalidated() <-chan struct{} {
	if a.Cache == nil {
		return nil
	}
	return a.Cache.Changed()
}

// Authenticate verifies the Authorization header value and returns its
// Principal. It returns ErrNoCredentials, ErrInvalidToken or ErrTokenExpired
// for a caller that is not authenticated, and the store's error otherwise.
// The account's state (inactive, expired) is not judged here: that is the
// policy's decision.
func (a *Authenticator) Authenticate(ctx context.Context, header string) (Principal, error) {
	p, _, err := a.AuthenticateCached(ctx, header)
	return p, err
}

// AuthenticateCached is Authenticate that also says whether the principal
// came from the cache (CacheHit), from the database after a CacheMiss, or
// from the database because there is no trusted cache (CacheBypass). A
// header that is missing or malformed is refused before any lookup
// (CacheBypass).
func (a *Authenticator) AuthenticateCached(ctx context.Context, header string) (Principal, CacheOutcome, error) {
	if header == "" {
		return Principal{}, CacheBypass, ErrNoCredentials
	}
	secret, err := TokenFromHeader(header) // checks the format, once
	if err != nil {
		return Principal{}, CacheBypass, ErrInvalidToken
	}
	hash := hashOf(secret)
	now := a.now()
	outcome := CacheBypass
	var principal Principal
	if a.Cache != nil {
		principal, outcome = a.Cache.Get(hash, now)
	}
	if outcome != CacheHit {
		var epoch uint64
		if a.Cache != nil {
			epoch = a.Cache.Epoch() // before the lookup: see PrincipalCache.Add
		}
		found := false
		principal, found, err = a.Store.PrincipalByTokenHash(ctx, hash)
		if err != nil {
			return Principal{}, outcome, err
		}
		// Unknown and revoked tokens are never cached: a token created
		// later is looked up afresh, and unknown hashes take no place.
		// A token whose minters could not be loaded whole (only possible
		// behind the API's back) is refused: its requests could not be
		// counted against every minter's budget.
		if !found || principal.Token.RevokedAt != nil || principal.MintersIncomplete {
			return Principal{}, outcome, ErrInvalidToken
		}
		// A chain that could not be loaded whole is not cached either: it
		// is denied, and the row that completes it (an insert) sends no
		// notification.
		if a.Cache != nil && !principal.AncestorsIncomplete && !principal.FromStandby {
			a.Cache.Add(hash, principal, epoch, now)
		}
	}
	// Expiry by time is judged on every request, cached or not: no
	// notification marks the moment a token expires.
	if principal.Token.ExpiresAt != nil && !now.Before(*principal.Token.ExpiresAt) {
		return Principal{}, outcome, ErrTokenExpired
	}
	// A principal read from a standby (no primary, a fail-over) is not
	// touched: that is a write, and the primary is what is missing.
	if !principal.FromStandby && (principal.Token.LastUsedAt == nil || now.Sub(*principal.Token.LastUsedAt) >= TouchInterval) {
		if err := a.Store.TouchToken(ctx, principal.Token.ID, now); err != nil {
			return Principal{}, outcome, err
		}
		if a.Cache != nil {
			a.Cache.Touched(hash, now)
		}
	}
	return principal, outcome, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
