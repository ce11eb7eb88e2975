package storage_test

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// treeAccounts is one branch of every depth, each account with a state the
// chain must carry: an inactive admin, an expiring manager, a read-only
// user and its subaccount.
const treeAccounts = `{"accounts": [
	{"username": "root", "type": "admin", "active": false},
	{"username": "reseller", "type": "manager", "manager": "root", "account_expire": true, "account_expire_dt": "2024-02-29"},
	{"username": "customer", "type": "user", "manager": "reseller", "read_only": true},
	{"username": "driver", "type": "subaccount", "manager": "customer", "privileges": ["reports"]},
	{"username": "direct", "type": "user", "manager": "root"},
	{"username": "orphan", "type": "user"}]}`

// chainOf returns usernames and ids of a principal's ancestors.
func chainOf(p tenancy.Principal) []string {
	out := make([]string, len(p.Ancestors))
	for i, a := range p.Ancestors {
		out[i] = fmt.Sprintf("%s#%d", a.Username, a.ID)
	}
	return out
}

// countingHook counts the statements run through a database handle.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	h.n.Add(1)
	return ctx
}

func (h *countingHook) AfterQuery(context.Context, *bun.QueryEvent) {}

// TestPrincipalAncestors: the principal of a token at every depth of the
// tree carries every account above it, nearest first, with the facts the
// policy reads, in one statement, by hash and by token id alike.
func TestPrincipalAncestors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, []byte(treeAccounts))
	ids := map[string]int64{}
	for _, u := range []string{"root", "reseller", "customer", "driver", "direct", "orphan"} {
		a, err := s.AccountByUsername(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		ids[u] = a.ID
	}
	hook := &countingHook{}
	counted := storage.NewStore(db.WithQueryHook(hook))
	want := map[string][]string{
		"driver":   {"customer", "reseller", "root"},
		"customer": {"reseller", "root"},
		"reseller": {"root"},
		"root":     {},
		"direct":   {"root"},
		"orphan":   {},
	}
	for user, above := range want {
		t.Run(user, func(t *testing.T) {
			secret, tok, err := s.CreateToken(ctx, storage.NewToken{Username: user, Permissions: []string{"*"}})
			if err != nil {
				t.Fatal(err)
			}
			hash, _ := tenancy.HashToken(secret)
			before := hook.n.Load()
			p, found, err := counted.PrincipalByTokenHash(ctx, hash)
			if err != nil || !found {
				t.Fatalf("found %v, err %v", found, err)
			}
			if n := hook.n.Load() - before; n != 1 {
				t.Errorf("%d statements, want 1 (the chain is loaded with the token)", n)
			}
			wantChain := make([]string, len(above))
			for i, u := range above {
				wantChain[i] = fmt.Sprintf("%s#%d", u, ids[u])
			}
			if got := chainOf(p); !reflect.DeepEqual(got, wantChain) {
				t.Errorf("ancestors %v, want %v", got, wantChain)
			}
			if p.Account.Username != user || p.Token.ID != tok.ID || p.AncestorsIncomplete {
				t.Errorf("principal %+v", p)
			}
			byID, err := s.PrincipalByTokenID(ctx, tok.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(byID, p) {
				t.Errorf("by id %+v\nby hash %+v", byID, p)
			}
		})
	}
	t.Run("facts", func(t *testing.T) {
		secret, _, err := s.CreateToken(ctx, storage.NewToken{Username: "driver", Name: "facts", Permissions: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		hash, _ := tenancy.HashToken(secret)
		p, _, err := s.PrincipalByTokenHash(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Ancestors) != 3 {
			t.Fatalf("ancestors %v", chainOf(p))
		}
		cust, res, root := p.Ancestors[0], p.Ancestors[1], p.Ancestors[2]
		if cust.Type != tenancy.User || !cust.Active || !cust.ReadOnly || cust.AccountExpire || cust.ManagerID != ids["reseller"] {
			t.Errorf("customer %+v", cust)
		}
		if res.Type != tenancy.Manager || !res.Active || res.ReadOnly || !res.AccountExpire ||
			res.ExpireDate.Format("2006-01-02") != "2024-02-29" || res.ManagerID != ids["root"] {
			t.Errorf("reseller %+v", res)
		}
		if root.Type != tenancy.Admin || root.Active || root.ManagerID != 0 || !root.ExpireDate.IsZero() {
			t.Errorf("root %+v", root)
		}
	})
}

// TestPrincipalAncestorsBounded: manager_id links written behind the
// database's back (the fixed-levels trigger disabled, as in a database
// older than it) may loop, run deeper than the fixed levels allow or name
// a row that is gone; the walk still ends, lists each account once, and
// the chain is marked incomplete (docs/design.md §2: it reaches the policy as such
// and is denied), never shorter than it is: a loop shows every account of
// it, a deep chain one account more than the levels allow.
func TestPrincipalAncestorsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.NewRaw(q, args...).Exec(ctx); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("ALTER TABLE accounts DISABLE TRIGGER accounts_fixed_levels")
	// the last statement closes the loop a → c → b → a
	for _, q := range []string{
		"INSERT INTO accounts (username, type) VALUES ('a', 'user')",
		"INSERT INTO accounts (username, type, manager_id) SELECT 'b', 'user', id FROM accounts WHERE username = 'a'",
		"INSERT INTO accounts (username, type, manager_id) SELECT 'c', 'user', id FROM accounts WHERE username = 'b'",
		"UPDATE accounts SET manager_id = (SELECT id FROM accounts WHERE username = 'c') WHERE username = 'a'",
	} {
		exec(q)
	}
	lookup := func(t *testing.T, user string) tenancy.Principal {
		t.Helper()
		secret, tok, err := s.CreateToken(ctx, storage.NewToken{Username: user, Permissions: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		hash, _ := tenancy.HashToken(secret)
		p, found, err := s.PrincipalByTokenHash(ctx, hash)
		if err != nil || !found {
			t.Fatalf("found %v, err %v", found, err)
		}
		byID, err := s.PrincipalByTokenID(ctx, tok.ID)
		if err != nil || byID.AncestorsIncomplete != p.AncestorsIncomplete {
			t.Fatalf("by id: %+v, %v", byID, err)
		}
		return p
	}
	names := func(p tenancy.Principal) []string {
		var out []string
		for _, a := range p.Ancestors {
			out = append(out, a.Username)
		}
		return out
	}
	t.Run("loop", func(t *testing.T) {
		p := lookup(t, "a")
		if !reflect.DeepEqual(names(p), []string{"c", "b"}) || !p.AncestorsIncomplete {
			t.Errorf("ancestors of a in the loop a→c→b→a: %v (incomplete %t), want [c b], incomplete", names(p), p.AncestorsIncomplete)
		}
	})
	t.Run("deep", func(t *testing.T) {
		exec("INSERT INTO accounts (username, type) VALUES ('deep-top', 'user')")
		prev := "deep-top"
		for i := range storage.MaxAncestors + 3 {
			u := fmt.Sprintf("deep%02d", i)
			exec("INSERT INTO accounts (username, type, manager_id) SELECT ?, 'user', id FROM accounts WHERE username = ?", u, prev)
			prev = u
			p := lookup(t, u)
			depth := i + 1 // accounts above u
			switch {
			case depth <= storage.MaxAncestors && (p.AncestorsIncomplete || len(p.Ancestors) != depth):
				t.Errorf("%s, %d accounts above: %v (incomplete %t), want all of them, whole", u, depth, names(p), p.AncestorsIncomplete)
			case depth > storage.MaxAncestors && (!p.AncestorsIncomplete || len(p.Ancestors) != storage.MaxAncestors+1):
				t.Errorf("%s, %d accounts above: %v (incomplete %t), want the nearest %d, incomplete", u, depth, names(p), p.AncestorsIncomplete, storage.MaxAncestors+1)
			}
		}
	})
	t.Run("missing_row", func(t *testing.T) {
		exec("INSERT INTO accounts (username, type) VALUES ('gone', 'manager')")
		exec("INSERT INTO accounts (username, type, manager_id) SELECT 'left', 'user', id FROM accounts WHERE username = 'gone'")
		exec("INSERT INTO accounts (username, type, manager_id) SELECT 'left-sub', 'subaccount', id FROM accounts WHERE username = 'left'")
		exec("ALTER TABLE accounts DISABLE TRIGGER ALL")
		exec("DELETE FROM accounts WHERE username = 'gone'")
		exec("ALTER TABLE accounts ENABLE TRIGGER ALL")
		for user, above := range map[string][]string{"left": nil, "left-sub": {"left"}} {
			p := lookup(t, user)
			if !reflect.DeepEqual(names(p), above) || !p.AncestorsIncomplete {
				t.Errorf("%s under a missing manager: %v (incomplete %t), want %v, incomplete", user, names(p), p.AncestorsIncomplete, above)
			}
		}
	})
}

// TestPrincipalMinters: a token's minting ancestors are loaded with it,
// nearest first, with their accounts and rate limits, in the same
// statement (the root here a token of the customer's reseller); a lineage
// that loops or runs deeper than tenancy.MaxTokenGeneration (only possible
// behind the API's back) is marked incomplete, and authentication refuses
// such a token.
func TestPrincipalMinters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, []byte(treeAccounts))
	accountOf := map[int64]int64{}
	mkIn := func(username, name string, parent int64, rate int) (string, int64) {
		t.Helper()
		secret, tok, err := s.CreateToken(ctx, storage.NewToken{Username: username, Name: name, Permissions: []string{"*"}, RateLimit: rate})
		if err != nil {
			t.Fatal(err)
		}
		if parent != 0 {
			if _, err := db.ExecContext(ctx, "UPDATE tokens SET parent_token_id = ? WHERE id = ?", parent, tok.ID); err != nil {
				t.Fatal(err)
			}
		}
		accountOf[tok.ID] = tok.AccountID
		return secret, tok.ID
	}
	mk := func(name string, parent int64, rate int) (string, int64) {
		t.Helper()
		return mkIn("customer", name, parent, rate)
	}
	lookup := func(secret string) tenancy.Principal {
		t.Helper()
		hash, _ := tenancy.HashToken(secret)
		p, found, err := s.PrincipalByTokenHash(ctx, hash)
		if err != nil || !found {
			t.Fatalf("found %v, err %v", found, err)
		}
		return p
	}
	_, root := mkIn("reseller", "root", 0, 50)
	_, mid := mk("mid", root, 0)
	leafSecret, leaf := mk("leaf", mid, 5)
	p := lookup(leafSecret)
	if p.MintersIncomplete || !reflect.DeepEqual(p.Minters, []tenancy.Minter{{ID: mid, AccountID: accountOf[mid]}, {ID: root, AccountID: accountOf[root], RateLimit: 50}}) ||
		accountOf[root] == accountOf[mid] || p.Token.ParentID != mid {
		t.Fatalf("minters of the leaf: %+v (incomplete %t), parent %d", p.Minters, p.MintersIncomplete, p.Token.ParentID)
	}
	auth := &tenancy.Authenticator{Store: s}
	if _, err := auth.Authenticate(ctx, "Bearer "+leafSecret); err != nil {
		t.Fatalf("a whole lineage: %v", err)
	}
	// a loop: root's parent is the leaf
	if _, err := db.ExecContext(ctx, "UPDATE tokens SET parent_token_id = ? WHERE id = ?", leaf, root); err != nil {
		t.Fatal(err)
	}
	if p := lookup(leafSecret); !p.MintersIncomplete {
		t.Errorf("a loop of parents: %+v, want incomplete", p.Minters)
	}
	if _, err := auth.Authenticate(ctx, "Bearer "+leafSecret); err == nil {
		t.Error("a token whose lineage loops was accepted")
	}
	// deeper than the bound
	if _, err := db.ExecContext(ctx, "UPDATE tokens SET parent_token_id = NULL WHERE id = ?", root); err != nil {
		t.Fatal(err)
	}
	secret, prev := "", leaf
	for i := range tenancy.MaxTokenGeneration {
		secret, prev = mk(fmt.Sprintf("deep-%d", i), prev, 0)
	}
	if p := lookup(secret); !p.MintersIncomplete || len(p.Minters) != tenancy.MaxTokenGeneration+1 {
		t.Errorf("%d generations: %d minters loaded (incomplete %t), want %d, incomplete", tenancy.MaxTokenGeneration+2,
			len(p.Minters), p.MintersIncomplete, tenancy.MaxTokenGeneration+1)
	}
}
