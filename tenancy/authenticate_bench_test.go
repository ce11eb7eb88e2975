package tenancy_test

import (
	"context"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/tenancy"
)

// memStore is a TokenStore in memory, so that the benchmarks measure the
// authentication code and not the database.
type memStore struct {
	byHash map[tenancy.TokenHash]tenancy.Principal
}

func (m memStore) PrincipalByTokenHash(_ context.Context, h tenancy.TokenHash) (tenancy.Principal, bool, error) {
	p, ok := m.byHash[h]
	return p, ok, nil
}

func (m memStore) TouchToken(context.Context, int64, time.Time) error { return nil }

const benchSecret = "flt_0123456789ABCDEFGHIJabcdefghijkl"

// BenchmarkHashToken: format check and SHA-256 of a token secret.
func BenchmarkHashToken(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tenancy.HashToken(benchSecret); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenFromHeader: parsing "Bearer <token>".
func BenchmarkTokenFromHeader(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tenancy.TokenFromHeader("Bearer " + benchSecret); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthenticate: the whole Authenticate path (header, hash,
// lookup, expiry and last-used checks) over an in-memory store; the
// database lookup it stands for is measured by the load harness.
func BenchmarkAuthenticate(b *testing.B) {
	h, err := tenancy.HashToken(benchSecret)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	p := tenancy.Principal{
		Token:   tenancy.Token{ID: 1, AccountID: 7, Permissions: []string{"*"}, LastUsedAt: &now},
		Account: tenancy.Account{ID: 7, Type: tenancy.User, Active: true},
	}
	a := &tenancy.Authenticator{Store: memStore{byHash: map[tenancy.TokenHash]tenancy.Principal{h: p}}, Now: func() time.Time { return now }}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, "Bearer "+benchSecret); err != nil {
			b.Fatal(err)
		}
	}
}
