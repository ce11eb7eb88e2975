package demodata_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestActiveTokens: every token whose secret is published in the demo
// data and that works is found, whichever account holds it; revoked and
// expired ones are not.
func TestActiveTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	now := time.Now()
	if got, err := demodata.ActiveTokens(ctx, db.DB, now); err != nil || len(got) != 0 {
		t.Fatalf("empty database: %v %v", got, err)
	}
	importJSON(t, db, demodata.File())

	// Every demo token that has not expired, by the file's own expiry.
	var f struct {
		Tokens []struct {
			Name      string     `json:"name"`
			ExpiresAt *time.Time `json:"expires_at"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(demodata.File(), &f); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tok := range f.Tokens {
		if tok.ExpiresAt == nil || tok.ExpiresAt.After(now) {
			want = append(want, tok.Name)
		}
	}
	names := func() []string {
		t.Helper()
		got, err := demodata.ActiveTokens(ctx, db.DB, now)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for i, g := range got {
			if g.ID == 0 || g.Username == "" || (i > 0 && got[i-1].ID >= g.ID) {
				t.Fatalf("token %+v: want id, account and ascending ids", g)
			}
			n = append(n, g.Name)
		}
		return n
	}
	if got := names(); !slices.Equal(got, want) || len(want) < 10 {
		t.Fatalf("active demo tokens %v, want %v", got, want)
	}

	// Revoked: gone.
	toks, err := s.ListTokens(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeToken(ctx, toks[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := names(); slices.Contains(got, "admin-all") || len(got) != len(want)-1 {
		t.Fatalf("after revoking admin-all: %v", got)
	}

}

// TestActiveTokensOnOtherAccounts: a demo secret on an account that is
// not demo data is found too (the way the old dev attached demo tokens to
// existing accounts of the same name), until it expires.
func TestActiveTokensOnOtherAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.New(t)
	now := time.Now()
	importJSON(t, db, []byte(`{"accounts": [{"username": "realco", "type": "manager"}],
		"tokens": [{"account": "realco", "name": "copied", "secret": "flt_demoAdmin00000000000000000000000", "permissions": ["*"],
		            "expires_at": "`+now.Add(time.Hour).UTC().Format(time.RFC3339)+`"},
		           {"account": "realco", "name": "own", "secret": "flt_realco00000000000000000000000000", "permissions": ["*"]}]}`))
	got, err := demodata.ActiveTokens(ctx, db.DB, now)
	if err != nil || len(got) != 1 || got[0].Name != "copied" || got[0].Username != "realco" {
		t.Fatalf("active demo tokens %+v, %v; want realco's copied only", got, err)
	}
	if got, err := demodata.ActiveTokens(ctx, db.DB, now.Add(2*time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("after its expiry: %+v, %v", got, err)
	}
}

// TestForeignAccounts: accounts whose username is not in the demo data, or
// whose type differs from the demo data's, are reported.
func TestForeignAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.New(t)
	if got, err := demodata.ForeignAccounts(ctx, db.DB); err != nil || len(got) != 0 {
		t.Fatalf("empty database: %v %v", got, err)
	}
	importJSON(t, db, demodata.File())
	if got, err := demodata.ForeignAccounts(ctx, db.DB); err != nil || len(got) != 0 {
		t.Fatalf("demo data only: %v %v", got, err)
	}
	importJSON(t, db, []byte(`{"accounts": [{"username": "zeta", "type": "user", "manager": "fleetco"},
		{"username": "beta", "type": "manager"}]}`))
	if _, err := db.DB.ExecContext(ctx, "UPDATE accounts SET type = 'admin' WHERE username = 'northwind'"); err != nil {
		t.Fatal(err)
	}
	got, err := demodata.ForeignAccounts(ctx, db.DB)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"beta", "northwind", "zeta"}; !slices.Equal(got, want) {
		t.Fatalf("non-demo accounts %v, want %v", got, want)
	}
}

// TestForeignAccountsUnmigrated: a database without the schema holds no
// accounts (dev looks before it migrates).
func TestForeignAccountsUnmigrated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.New(t)
	if _, err := db.DB.ExecContext(ctx, "DROP TABLE accounts CASCADE"); err != nil {
		t.Fatal(err)
	}
	if got, err := demodata.ForeignAccounts(ctx, db.DB); err != nil || len(got) != 0 {
		t.Fatalf("no accounts table: %v %v", got, err)
	}
}
