package tenancy

import (
	"crypto/sha256"
	"errors"
	"slices"
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

// TestChargedMinters (issue 34 item 2): a request spends the budgets of
// its token's minters only while the lineage stays inside its tenant (its
// account and, for a subaccount, its parent user), nearest first; the
// first minter of another account ends it, even if a later one were of
// the tenant again.
func TestChargedMinters(t *testing.T) {
	const operator, reseller, customer, integration, sibling = 1, 2, 3, 4, 5
	m := func(id, account int64) Minter { return Minter{ID: id, AccountID: account} }
	user := Account{ID: customer, Type: User, ManagerID: reseller}
	sub := Account{ID: integration, Type: Subaccount, ManagerID: customer}
	up := []Account{{ID: customer, Type: User, ManagerID: reseller}, {ID: reseller, Type: Manager, ManagerID: operator}}
	for _, c := range []struct {
		name      string
		account   Account
		ancestors []Account
		minters   []Minter
		want      []int64
	}{
		{"operator-made token", user, up[1:], nil, nil},
		{"first token minted by the reseller", user, up[1:], []Minter{m(20, reseller), m(10, operator)}, nil},
		{"children within the customer", user, up[1:], []Minter{m(31, customer), m(30, customer), m(20, reseller), m(10, operator)}, []int64{31, 30}},
		{"integration minted by its customer", sub, up, []Minter{m(40, integration), m(30, customer), m(20, reseller)}, []int64{40, 30}},
		{"a sibling's minter ends the lineage", user, up[1:], []Minter{m(31, customer), m(50, sibling), m(30, customer)}, []int64{31}},
		{"a subaccount's parent not loaded", sub, nil, []Minter{m(30, customer)}, nil},
		{"a reseller's own children", Account{ID: reseller, Type: Manager, ManagerID: operator}, nil,
			[]Minter{m(21, reseller), m(20, reseller), m(10, operator)}, []int64{21, 20}},
	} {
		p := Principal{Account: c.account, Ancestors: c.ancestors, Minters: c.minters}
		var got []int64
		for _, m := range p.ChargedMinters() {
			got = append(got, m.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: charged %v, want %v", c.name, got, c.want)
		}
	}
}
