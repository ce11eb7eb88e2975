package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

const tokenAccounts = `{"accounts": [
	{"username": "mgr", "type": "manager"},
	{"username": "acme", "type": "user", "manager": "mgr", "email": "ops@acme.example"},
	{"username": "night", "type": "subaccount", "manager": "acme", "privileges": ["reports"],
	 "account_expire": true, "account_expire_dt": "2030-06-30"}]}`

func TestCreateTokenAndLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, []byte(tokenAccounts))

	exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Microsecond)
	secret, tok, err := s.CreateToken(ctx, storage.NewToken{
		Username: "night", Name: "ops", Permissions: []string{"GET /reports", "GET /events/{id}"}, ExpiresAt: &exp, RateLimit: 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tenancy.ValidTokenFormat(secret) {
		t.Fatalf("secret %q does not have the token format", secret)
	}
	if tok.ID == 0 || tok.Name != "ops" || tok.RateLimit != 30 || tok.CreatedAt.IsZero() || !tok.ExpiresAt.Equal(exp) {
		t.Fatalf("token: %+v", tok)
	}

	t.Run("lookup_by_hash", func(t *testing.T) {
		hash, _ := tenancy.HashToken(secret)
		p, found, err := s.PrincipalByTokenHash(ctx, hash)
		if err != nil || !found {
			t.Fatalf("found %v, err %v", found, err)
		}
		parent, err := s.AccountByUsername(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		a := p.Account
		if a.Username != "night" || a.Type != tenancy.Subaccount || a.ManagerID != parent.ID || !a.Active ||
			!a.AccountExpire || a.ExpireDate.Format("2006-01-02") != "2030-06-30" || len(a.Privileges) != 1 || a.Privileges[0] != "reports" {
			t.Errorf("account: %+v", a)
		}
		if p.Token.ID != tok.ID || len(p.Token.Permissions) != 2 || p.Token.Permissions[1] != "GET /events/{id}" || p.Token.RateLimit != 30 {
			t.Errorf("token: %+v", p.Token)
		}
	})

	t.Run("unknown_hash_not_found", func(t *testing.T) {
		other, _ := tenancy.NewTokenSecret()
		hash, _ := tenancy.HashToken(other)
		_, found, err := s.PrincipalByTokenHash(ctx, hash)
		if err != nil || found {
			t.Fatalf("found %v, err %v; want not found, no error", found, err)
		}
	})

	t.Run("only_the_hash_is_stored", func(t *testing.T) {
		var stored []byte
		if err := db.NewRaw("SELECT hash FROM tokens WHERE id = ?", tok.ID).Scan(ctx, &stored); err != nil {
			t.Fatal(err)
		}
		if want, _ := tenancy.HashToken(secret); string(stored) != string(want[:]) {
			t.Fatalf("stored hash %x, want SHA-256 of the secret %x", stored, want)
		}
	})

	t.Run("default_names_are_unique", func(t *testing.T) {
		_, a, err := s.CreateToken(ctx, storage.NewToken{Username: "acme", Permissions: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		_, b, err := s.CreateToken(ctx, storage.NewToken{Username: "acme", Permissions: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Name == "" || a.Name == b.Name {
			t.Fatalf("default names %q and %q", a.Name, b.Name)
		}
		if a.RateLimit != 0 || a.ExpiresAt != nil {
			t.Fatalf("defaults: %+v", a)
		}
	})
}

func TestCreateTokenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, []byte(tokenAccounts))
	if _, _, err := s.CreateToken(ctx, storage.NewToken{Username: "acme", Name: "taken", Permissions: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	tests := []struct {
		name string
		nt   storage.NewToken
		want error
	}{
		{"unknown_account", storage.NewToken{Username: "ghost", Permissions: []string{"*"}}, storage.ErrNotFound},
		{"duplicate_name", storage.NewToken{Username: "acme", Name: "taken", Permissions: []string{"*"}}, storage.ErrConflict},
		{"negative_rate_limit", storage.NewToken{Username: "acme", Permissions: []string{"*"}, RateLimit: -1}, storage.ErrInvalid},
		{"expiry_in_the_past", storage.NewToken{Username: "acme", Permissions: []string{"*"}, ExpiresAt: &past}, storage.ErrInvalid},
		{"empty_permission", storage.NewToken{Username: "acme", Permissions: []string{""}}, storage.ErrInvalid},
		{"unknown_method", storage.NewToken{Username: "acme", Permissions: []string{"FETCH /services"}}, storage.ErrInvalid},
		{"lower_case_method", storage.NewToken{Username: "acme", Permissions: []string{"get *"}}, storage.ErrInvalid},
		{"path_without_slash", storage.NewToken{Username: "acme", Permissions: []string{"GET services"}}, storage.ErrInvalid},
		{"path_with_space", storage.NewToken{Username: "acme", Permissions: []string{"GET /a b"}}, storage.ErrInvalid},
		{"path_with_query", storage.NewToken{Username: "acme", Permissions: []string{"GET /services?imei=1"}}, storage.ErrInvalid},
		{"star_suffix", storage.NewToken{Username: "acme", Permissions: []string{"**"}}, storage.ErrInvalid},
		{"misspelt_route", storage.NewToken{Username: "acme", Permissions: []string{"GET /servics"}}, storage.ErrInvalid},
		{"method_the_route_lacks", storage.NewToken{Username: "acme", Permissions: []string{"PUT /services"}}, storage.ErrInvalid},
		{"raw_path", storage.NewToken{Username: "acme", Permissions: []string{"GET /events/12"}}, storage.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.CreateToken(ctx, tc.nt)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			noDriverWords(t, err)
		})
	}
	// The operator's words (docs/design.md §7).
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"create_unknown_account", func() error {
			_, _, err := s.CreateToken(ctx, storage.NewToken{Username: "ghost", Permissions: []string{"*"}})
			return err
		}, `account "ghost" not found`},
		{"create_duplicate_name", func() error {
			_, _, err := s.CreateToken(ctx, storage.NewToken{Username: "acme", Name: "taken", Permissions: []string{"*"}})
			return err
		}, `a token named "taken" already exists for acme`},
		{"list_unknown_account", func() error { _, err := s.ListTokens(ctx, "ghost"); return err }, `account "ghost" not found`},
		{"revoke_unknown_id", func() error { return s.RevokeToken(ctx, 999999) }, `token 999999 not found`},
		{"principal_unknown_id", func() error { _, err := s.PrincipalByTokenID(ctx, 999999); return err }, `token 999999 not found`},
		{"account_unknown", func() error { _, err := s.AccountByUsername(ctx, "ghost"); return err }, `account "ghost" not found`},
	} {
		t.Run("words_"+tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCreateTokenPermissions: CreateToken refuses, wrapping ErrInvalid and
// naming it, every permission that matches no route of the API (the class
// is enumerated in tenancy's tests), and stores the ones that do.
func TestCreateTokenPermissions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, []byte(tokenAccounts))
	for i, p := range []string{"*", "GET *", "POST *", "GET /services", "GET /events/{id}", "POST /passengers", "GET /me", "DELETE *", "DELETE /tokens/{id}"} {
		nt := storage.NewToken{Username: "acme", Name: fmt.Sprintf("ok-%d", i), Permissions: []string{p}}
		if _, _, err := s.CreateToken(ctx, nt); err != nil {
			t.Errorf("%q refused: %v", p, err)
		}
	}
	bad := []string{"GET /servics", "PUT /services", "GET /events/12", "DELETE /x", "PUT /x", "PATCH /x", "DELETE /tokens/1", "GET /api/v2/services"}
	for _, m := range []string{"PUT", "DELETE", "PATCH"} { // "M *" is refused while no route has the method M
		if !slices.ContainsFunc(tenancy.Routes(), func(r tenancy.Route) bool { return r.Method == m }) {
			bad = append(bad, m+" *")
		}
	}
	for _, p := range bad {
		nt := storage.NewToken{Username: "acme", Permissions: []string{"GET /me", p}}
		if _, _, err := s.CreateToken(ctx, nt); !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), `"`+p+`"`) {
			t.Errorf("%q: %v, want ErrInvalid naming it", p, err)
		}
	}
}

// noDriverWords fails when err shows the driver's words to the operator.
func noDriverWords(t *testing.T, err error) {
	t.Helper()
	for _, driver := range []string{"sql:", "constraint", "duplicate key", "violates", "no rows"} {
		if err != nil && strings.Contains(err.Error(), driver) {
			t.Errorf("error %q speaks the driver's language (%q)", err, driver)
		}
	}
}

func TestTouchToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, []byte(tokenAccounts))
	secret, tok, err := s.CreateToken(ctx, storage.NewToken{Username: "acme", Permissions: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := tenancy.HashToken(secret)
	lastUsed := func() *time.Time {
		t.Helper()
		p, _, err := s.PrincipalByTokenHash(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		return p.Token.LastUsedAt
	}
	if lastUsed() != nil {
		t.Fatal("a new token has last_used_at")
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{"first_use_writes", t0, t0},
		{"within_a_minute_keeps", t0.Add(59 * time.Second), t0},
		{"after_a_minute_writes", t0.Add(61 * time.Second), t0.Add(61 * time.Second)},
		{"again_within_a_minute_keeps", t0.Add(90 * time.Second), t0.Add(61 * time.Second)},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := s.TouchToken(ctx, tok.ID, st.at); err != nil {
				t.Fatal(err)
			}
			if got := lastUsed(); got == nil || !got.Equal(st.want) {
				t.Fatalf("last_used_at %v, want %v", got, st.want)
			}
		})
	}
	t.Run("unknown_id_is_no_error", func(t *testing.T) {
		if err := s.TouchToken(ctx, 999999, t0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRevokeAndListTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, []byte(tokenAccounts))
	var ids []int64
	for _, name := range []string{"a", "b", "c"} {
		_, tok, err := s.CreateToken(ctx, storage.NewToken{Username: "acme", Name: name, Permissions: []string{"GET *"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tok.ID)
	}
	if _, _, err := s.CreateToken(ctx, storage.NewToken{Username: "mgr", Name: "a", Permissions: []string{"*"}}); err != nil {
		t.Fatalf("the same name on another account: %v", err)
	}

	t.Run("revoke", func(t *testing.T) {
		if err := s.RevokeToken(ctx, ids[1]); err != nil {
			t.Fatal(err)
		}
	})
	list := func(t *testing.T) []tenancy.Token {
		t.Helper()
		toks, err := s.ListTokens(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		return toks
	}
	first := list(t)
	t.Run("list_in_order_with_revoked", func(t *testing.T) {
		if len(first) != 3 {
			t.Fatalf("%d tokens, want 3", len(first))
		}
		for i, tok := range first {
			if tok.ID != ids[i] {
				t.Errorf("token %d: id %d, want %d", i, tok.ID, ids[i])
			}
			if revoked := tok.RevokedAt != nil; revoked != (i == 1) {
				t.Errorf("token %q revoked = %v", tok.Name, revoked)
			}
		}
	})
	t.Run("revoke_again_is_idempotent", func(t *testing.T) {
		time.Sleep(10 * time.Millisecond)
		if err := s.RevokeToken(ctx, ids[1]); err != nil {
			t.Fatal(err)
		}
		if again := list(t)[1].RevokedAt; !again.Equal(*first[1].RevokedAt) {
			t.Fatalf("revoked_at moved from %v to %v", first[1].RevokedAt, again)
		}
	})
	t.Run("revoke_unknown_not_found", func(t *testing.T) {
		if err := s.RevokeToken(ctx, 999999); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound", err)
		}
	})
	t.Run("list_unknown_account_not_found", func(t *testing.T) {
		if _, err := s.ListTokens(ctx, "ghost"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound", err)
		}
	})
	t.Run("account_by_username_unknown_not_found", func(t *testing.T) {
		if _, err := s.AccountByUsername(ctx, "ghost"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("err %v, want ErrNotFound", err)
		}
	})
}
