package demodata_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/tenancy"
)

// demoFile is the part of the demo data the token checks read.
type demoFile struct {
	Accounts []struct {
		Username string `json:"username"`
		Type     string `json:"type"`
		Manager  string `json:"manager"`
	} `json:"accounts"`
	Tokens []struct {
		Account     string   `json:"account"`
		Name        string   `json:"name"`
		Secret      string   `json:"secret"`
		Permissions []string `json:"permissions"`
	} `json:"tokens"`
}

func TestTokensMatchFile(t *testing.T) {
	t.Parallel()
	var f demoFile
	if err := json.Unmarshal(demodata.File(), &f); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, a := range f.Accounts {
		types[a.Username] = a.Type
	}
	demo := demodata.Tokens()
	if len(demo) != len(f.Tokens) {
		t.Fatalf("Tokens has %d tokens, the demo data %d", len(demo), len(f.Tokens))
	}
	for i, d := range demo {
		t.Run(d.Name, func(t *testing.T) {
			ft := f.Tokens[i]
			if d.Username != ft.Account || d.Name != ft.Name || d.Secret != ft.Secret || !slices.Equal(d.Permissions, ft.Permissions) {
				t.Errorf("Tokens[%d] = %+v, demo data has %+v", i, d, ft)
			}
			if string(d.AccountType) != types[d.Username] {
				t.Errorf("account type %q, demo data has %q", d.AccountType, types[d.Username])
			}
			if !tenancy.ValidTokenFormat(d.Secret) {
				t.Errorf("secret %q does not have the token format", d.Secret)
			}
			if d.Note == "" {
				t.Error("no note")
			}
		})
	}
}

func TestFileShape(t *testing.T) {
	t.Parallel()
	var f demoFile
	if err := json.Unmarshal(demodata.File(), &f); err != nil {
		t.Fatal(err)
	}
	users := map[string]int{}
	for _, a := range f.Accounts {
		if a.Type == "user" {
			users[a.Manager]++
		}
	}
	tenants := 0
	for _, a := range f.Accounts {
		if a.Type == "manager" && users[a.Username] > 0 {
			tenants++
		}
	}
	if tenants < 2 {
		t.Fatalf("%d managers with users, want at least 2 tenants", tenants)
	}
}

func TestTokensAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	for _, d := range demodata.Tokens() {
		t.Run(d.Name, func(t *testing.T) {
			hash, err := tenancy.HashToken(d.Secret)
			if err != nil {
				t.Fatal(err)
			}
			p, found, err := s.PrincipalByTokenHash(ctx, hash)
			if err != nil || !found {
				t.Fatalf("found %v, err %v", found, err)
			}
			if p.Account.Username != d.Username || p.Account.Type != d.AccountType || p.Token.Name != d.Name {
				t.Fatalf("principal %+v, want %s (%s) token %s", p, d.Username, d.AccountType, d.Name)
			}
		})
	}
}
