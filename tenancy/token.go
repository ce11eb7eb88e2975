package tenancy

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"math/big"
	"strings"
)

// TokenPrefix starts every fleetapi API token.
const TokenPrefix = "flt_"

// tokenSecretLen is the number of base62 characters after the prefix:
// 32 × log2(62) ≈ 190 bits of randomness.
const tokenSecretLen = 32

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ErrMalformedToken is returned for a string that does not have the token format.
var ErrMalformedToken = errors.New("malformed token")

// TokenHash is the SHA-256 digest under which a token is stored.
type TokenHash [sha256.Size]byte

// NewTokenSecret returns a fresh random token ("flt_" + 32 base62 characters).
func NewTokenSecret() (string, error) {
	var b strings.Builder
	b.Grow(len(TokenPrefix) + tokenSecretLen)
	b.WriteString(TokenPrefix)
	max := big.NewInt(int64(len(base62)))
	for range tokenSecretLen {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b.WriteByte(base62[n.Int64()])
	}
	return b.String(), nil
}

// ValidTokenFormat reports whether s has the token format of docs/design.md §3.
func ValidTokenFormat(s string) bool {
	if len(s) != len(TokenPrefix)+tokenSecretLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	for i := len(TokenPrefix); i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// HashToken returns the stored form of a token secret. It returns
// ErrMalformedToken when the secret does not have the token format.
func HashToken(secret string) (TokenHash, error) {
	if !ValidTokenFormat(secret) {
		return TokenHash{}, ErrMalformedToken
	}
	return hashOf(secret), nil
}

// hashOf is the SHA-256 of a secret whose format is already checked.
func hashOf(secret string) TokenHash { return sha256.Sum256([]byte(secret)) }

// TokenFromHeader extracts the token from an Authorization header value,
// which holds either "Bearer <token>" or the bare "<token>". The scheme is
// matched case-insensitively. It returns ErrMalformedToken when the value
// holds anything else.
func TokenFromHeader(value string) (string, error) {
	v := strings.TrimSpace(value)
	if scheme, rest, ok := strings.Cut(v, " "); ok {
		if !strings.EqualFold(scheme, "Bearer") {
			return "", ErrMalformedToken
		}
		v = strings.TrimSpace(rest)
	}
	if !ValidTokenFormat(v) {
		return "", ErrMalformedToken
	}
	return v, nil
}
