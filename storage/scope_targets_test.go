package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// worldDigest is an md5 of every row of every table of the public schema:
// two equal digests mean that nothing was stored, changed or deleted
// between them.
func worldDigest(t *testing.T, db *storagetest.DB) string {
	t.Helper()
	ctx := context.Background()
	var tables []string
	if err := db.NewRaw(`SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`).Scan(ctx, &tables); err != nil {
		t.Fatal(err)
	}
	parts := make([]string, 0, len(tables))
	for _, table := range tables {
		var sum string
		if err := db.NewRaw(fmt.Sprintf(`SELECT md5(COALESCE(string_agg(r::text, E'\n' ORDER BY r::text), '')) FROM %s AS r`, table)).Scan(ctx, &sum); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, table+":"+sum)
	}
	return strings.Join(parts, " ")
}

// TestScopedEntryPointsRefuseForeignAccounts (issue 39): storage keeps a
// write or a read inside the caller's management scope by itself, whatever
// the api checked before: every scoped entry point that names an account,
// a device or a token refuses one of another tenant (the other manager's
// tree, a sibling, the caller's own manager above it, an account that
// does not exist) with ErrNotFound, and none of the refusals changes a
// row of any table. MoveObject is checked both ways: its device and its
// new owner must both be in scope (the api refuses a foreign owner first,
// so only this test would see a store that moved a device into another
// tenant's account). A move inside the scope still works.
func TestScopedEntryPointsRefuseForeignAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	id := func(username string) int64 { return principalOf(t, s, username).Account.ID }
	device := func(imei string) int64 {
		var n int64
		if err := db.NewRaw("SELECT id FROM objects WHERE imei = ?", imei).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	token := func(username string) int64 {
		var n int64
		if err := db.NewRaw("SELECT t.id FROM tokens t JOIN accounts a ON a.id = t.account_id WHERE a.username = ? ORDER BY t.id LIMIT 1", username).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const missing = 987654
	acmeDevice, tailspinDevice := device("356938035643809"), device("865231041152302")
	// Each caller: its management scope, and accounts outside it.
	callers := []struct {
		username string
		foreign  []string
	}{
		// A manager: the other manager's tree and the admin above it.
		{"fleetco", []string{"northwind", "tailspin", "contoso", "admin"}},
		// A user: a sibling, its subaccount's sibling tree, its own manager.
		{"acme", []string{"globex", "globex-day", "fleetco", "tailspin"}},
	}
	before := worldDigest(t, db)
	refusals := 0
	for _, c := range callers {
		p := principalOf(t, s, c.username)
		scope, err := e.ManagementScope(ctx, policy.NewInput(p, "", "", demoToday))
		if err != nil {
			t.Fatal(err)
		}
		actor := storage.Actor{AccountID: p.Account.ID, TokenID: 1, RequestID: "req-foreign"}
		own := p.Account.ID
		targets := []int64{missing}
		for _, u := range c.foreign {
			targets = append(targets, id(u))
		}
		for _, to := range targets {
			calls := map[string]func() error{
				"MoveObject(own device to it)": func() error { _, err := s.MoveObject(ctx, scope, actor, acmeDevice, to); return err },
				"CreateObject": func() error {
					_, _, err := s.CreateObject(ctx, scope, actor, storage.Object{IMEI: fmt.Sprint("foreign-", to), AccountID: to}, nil)
					return err
				},
				"CreateAccount(under it)": func() error {
					_, _, err := s.CreateAccount(ctx, scope, actor, storage.Account{Username: fmt.Sprint("foreign-", to), Type: "subaccount", ManagerID: &to}, nil)
					return err
				},
				"UpdateAccount": func() error {
					email := "x@example.com"
					_, err := s.UpdateAccount(ctx, scope, actor, to, storage.AccountPatch{Email: &email})
					return err
				},
				"EraseManagedAccount": func() error { _, err := s.EraseManagedAccount(ctx, scope, actor, to); return err },
				"ReplaceGrants":       func() error { _, err := s.ReplaceGrants(ctx, scope, actor, to, []string{}); return err },
				"GrantedObjects": func() error {
					_, err := s.GrantedObjects(ctx, scope, to, storage.ListRequest{Page: 1, PerPage: 10})
					return err
				},
				"ParentDevices":  func() error { _, err := s.ParentDevices(ctx, scope, to, nil); return err },
				"ManagedAccount": func() error { _, _, _, err := s.ManagedAccount(ctx, scope, to); return err },
				"CreateManagedToken": func() error {
					_, _, _, err := s.CreateManagedToken(ctx, scope, actor, storage.ManagedTokenInput{AccountID: to, Name: "foreign", Permissions: []string{"*"}}, nil)
					return err
				},
			}
			for name, call := range calls {
				if err := call(); !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("%s: %s of account %d outside the scope: %v, want ErrNotFound", c.username, name, to, err)
				}
				refusals++
			}
		}
		// Rows of another tenant named by their own id.
		for name, call := range map[string]func() error{
			"MoveObject(foreign device to own account)": func() error { _, err := s.MoveObject(ctx, scope, actor, tailspinDevice, own); return err },
			"MoveObject(missing device)":                func() error { _, err := s.MoveObject(ctx, scope, actor, missing, own); return err },
			"ManagedObject":                             func() error { _, err := s.ManagedObject(ctx, scope, tailspinDevice); return err },
			"ManagedTokenByID":                          func() error { _, err := s.ManagedTokenByID(ctx, scope, token("tailspin")); return err },
			"RevokeManagedToken":                        func() error { return s.RevokeManagedToken(ctx, scope, actor, token("tailspin")) },
		} {
			if err := call(); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("%s: %s: %v, want ErrNotFound", c.username, name, err)
			}
			refusals++
		}
	}
	if after := worldDigest(t, db); after != before {
		t.Errorf("%d refused calls changed the database:\nbefore %s\nafter  %s", refusals, before, after)
	}
	// Inside the scope the move works: fleetco gives acme's device to globex.
	fleetco := principalOf(t, s, "fleetco")
	scope, err := e.ManagementScope(ctx, policy.NewInput(fleetco, "", "", demoToday))
	if err != nil {
		t.Fatal(err)
	}
	moved, err := s.MoveObject(ctx, scope, storage.Actor{AccountID: fleetco.Account.ID, TokenID: 1, RequestID: "req-move"}, acmeDevice, id("globex"))
	if err != nil || moved.AccountID != id("globex") || count(t, db, "SELECT count(*) FROM objects WHERE id = ? AND account_id = ?", acmeDevice, id("globex")) != 1 {
		t.Fatalf("a move inside the scope: %+v %v", moved, err)
	}
}
