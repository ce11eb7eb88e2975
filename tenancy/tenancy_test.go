package tenancy

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokenFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s, err := NewTokenSecret()
		if err != nil {
			t.Fatal(err)
		}
		if !ValidTokenFormat(s) || seen[s] {
			t.Fatalf("secret %q: valid %v, repeated %v", s, ValidTokenFormat(s), seen[s])
		}
		seen[s] = true
		h, err := HashToken(s)
		if err != nil || h != sha256.Sum256([]byte(s)) {
			t.Fatalf("hash of %q: %v", s, err)
		}
	}
	for _, bad := range []string{"", "flt_", "flt_" + strings.Repeat("a", 31), "flt_" + strings.Repeat("a", 33),
		"FLT_" + strings.Repeat("a", 32), "flt_" + strings.Repeat("a", 31) + "-", "flt_" + strings.Repeat("é", 16)} {
		if ValidTokenFormat(bad) {
			t.Errorf("%q accepted", bad)
		}
		if _, err := HashToken(bad); !errors.Is(err, ErrMalformedToken) {
			t.Errorf("HashToken(%q): %v", bad, err)
		}
	}
}

func TestTokenFromHeader(t *testing.T) {
	tok := "flt_" + strings.Repeat("A", 32)
	for _, h := range []string{tok, "Bearer " + tok, "bearer " + tok, " BEARER  " + tok + " "} {
		if got, err := TokenFromHeader(h); err != nil || got != tok {
			t.Errorf("%q: %q %v", h, got, err)
		}
	}
	for _, h := range []string{"Basic " + tok, "Bearer", "Bearer " + tok + " extra", "Token " + tok, tok + "x"} {
		if _, err := TokenFromHeader(h); !errors.Is(err, ErrMalformedToken) {
			t.Errorf("%q accepted", h)
		}
	}
}

// Authenticate itself is tested against the real database through the API
// (api/me_test.go: every 401 code, last_used_at) and storage's token tests.

func TestAccountExpired(t *testing.T) {
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		a    Account
		want bool
	}{
		{Account{}, false},
		{Account{AccountExpire: true}, false},
		{Account{AccountExpire: false, ExpireDate: day.AddDate(0, 0, -1)}, false},
		{Account{AccountExpire: true, ExpireDate: day}, false},
		{Account{AccountExpire: true, ExpireDate: day.AddDate(0, 0, -1)}, true},
	}
	for i, tt := range tests {
		if got := tt.a.Expired(day.Add(23 * time.Hour)); got != tt.want {
			t.Errorf("case %d: %v, want %v", i, got, tt.want)
		}
	}
}
