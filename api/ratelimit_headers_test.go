package api

import (
	"net/http"
	"testing"
)

// TestRateLimitHeaderKeys: checkToken writes the RateLimit-* headers into
// the header map directly, so their keys must be the canonical forms that
// Header.Set and Header.Get use, or a client would read none of them.
func TestRateLimitHeaderKeys(t *testing.T) {
	for name, key := range map[string]string{
		"RateLimit-Limit":     headerRateLimitLimit,
		"RateLimit-Remaining": headerRateLimitRemaining,
		"RateLimit-Reset":     headerRateLimitReset,
	} {
		if got := http.CanonicalHeaderKey(name); got != key {
			t.Errorf("%s: canonical key %q, written as %q", name, got, key)
		}
	}
}
