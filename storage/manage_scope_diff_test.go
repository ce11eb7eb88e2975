package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/tooling/oracle"
)

const (
	manageDiffSeed    = 20261212
	manageDiffCallers = 600
)

// TestManagementScopeDifferential checks the SQL of the management scope
// against the Rego rule itself: on a random account tree with odd shapes
// (managers under managers, users at the top and under users, subaccounts
// under managers and under subaccounts), for random callers of every type
// (some inactive or expired, some unknown), the accounts that
// Store.ManagedAccounts returns are exactly those for which
// data.fleet.manage.accounts, evaluated on the account's known row
// (grand_manager_id computed here, not by SQL), holds.
func TestManagementScopeDifferential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(manageDiffSeed, manageDiffSeed))

	type node struct {
		id, manager int64
		typ         tenancy.AccountType
	}
	nodes := map[int64]node{}
	var ids []int64
	byType := map[tenancy.AccountType][]node{}
	add := func(typ tenancy.AccountType, manager int64) node {
		a := &storage.Account{Username: fmt.Sprintf("%s-%d", typ, len(ids)), Type: typ, Active: true}
		if manager != 0 {
			a.ManagerID = &manager
		}
		if _, err := db.NewInsert().Model(a).Exec(ctx); err != nil {
			t.Fatalf("account: %v", err)
		}
		n := node{a.ID, manager, typ}
		nodes[n.id] = n
		ids = append(ids, n.id)
		byType[typ] = append(byType[typ], n)
		return n
	}
	pick := func(typ tenancy.AccountType) int64 { return byType[typ][r.IntN(len(byType[typ]))].id }
	// the odd shapes are outside the fixed levels the database enforces: a
	// database older than migration 20261220000001 may hold them, and the
	// scope must still not leak there
	if _, err := db.ExecContext(ctx, "ALTER TABLE accounts DISABLE TRIGGER accounts_fixed_levels"); err != nil {
		t.Fatal(err)
	}
	add(tenancy.Admin, 0)
	add(tenancy.Admin, 0)
	for range 6 {
		boss := int64(0)
		if r.IntN(2) == 0 {
			boss = pick(tenancy.Admin)
		}
		add(tenancy.Manager, boss)
	}
	for range 3 {
		add(tenancy.Manager, pick(tenancy.Manager))
	}
	for range 30 {
		add(tenancy.User, pick(tenancy.Manager))
	}
	add(tenancy.User, 0)
	add(tenancy.User, pick(tenancy.Admin))
	for range 3 {
		add(tenancy.User, pick(tenancy.User))
	}
	for range 60 {
		add(tenancy.Subaccount, pick(tenancy.User))
	}
	for range 4 {
		add(tenancy.Subaccount, pick(tenancy.Manager))
		add(tenancy.Subaccount, pick(tenancy.Subaccount))
	}

	o, err := oracle.New(ctx, e, policy.ManagementResource)
	if err != nil {
		t.Fatal(err)
	}
	row := func(n node) map[string]any {
		m := map[string]any{"id": n.id, "type": string(n.typ), "manager_id": nil, "grand_manager_id": nil}
		if n.manager != 0 {
			m["manager_id"] = n.manager
			if up := nodes[n.manager]; up.manager != 0 {
				m["grand_manager_id"] = up.manager
			}
		}
		return m
	}
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	types := []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount}
	admitted, failures := 0, 0
	seenTypes := map[tenancy.AccountType]int{}
	for range manageDiffCallers {
		typ := types[r.IntN(len(types))]
		me := byType[typ][r.IntN(len(byType[typ]))]
		if r.IntN(30) == 0 {
			me = node{900000 + r.Int64N(1000), r.Int64N(3), typ}
		}
		p := tenancy.Principal{Token: tenancy.Token{ID: 1, AccountID: me.id, Permissions: []string{"*"}},
			Account: tenancy.Account{ID: me.id, Type: me.typ, ManagerID: me.manager, Active: r.IntN(8) != 0}}
		if r.IntN(10) == 0 {
			p.Account.AccountExpire, p.Account.ExpireDate = true, today.AddDate(0, 0, -1)
		}
		in := policy.NewInput(p, "GET", "/accounts", today)
		scope, err := e.ManagementScope(ctx, in)
		if err != nil {
			t.Fatalf("scope for %+v: %v", p.Account, err)
		}
		got, err := s.ManagedAccounts(ctx, scope, ids...)
		if err != nil {
			t.Fatalf("SQL for %+v: %v", p.Account, err)
		}
		want := []int64{}
		for _, id := range ids {
			ok, err := o.Admits(ctx, in, row(nodes[id]))
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				want = append(want, id)
			}
		}
		admitted += len(want)
		seenTypes[typ] += len(want)
		if !slices.Equal(got, want) {
			failures++
			if failures <= 10 {
				t.Errorf("%+v (scope %s):\nSQL %v\npolicy %v", p.Account, scope, got, want)
			}
		}
	}
	t.Logf("%d accounts, %d callers, %d account checks, %d admitted (by caller type %v)",
		len(ids), manageDiffCallers, manageDiffCallers*len(ids), admitted, seenTypes)
	for _, typ := range types {
		if seenTypes[typ] == 0 {
			t.Errorf("no account was ever admitted for a %s: the test checks nothing there", typ)
		}
	}
}

// TestManagedAccountsRefusesOtherScopes: a row scope is not a management
// scope (policy.ErrScope), and no ids is no query.
func TestManagedAccountsRefusesOtherScopes(t *testing.T) {
	s, _ := newStore(t)
	e := newEngine(t)
	in := policy.NewInput(tenancy.Principal{Account: tenancy.Account{ID: 7, Type: tenancy.User, Active: true}}, "GET", "/accounts", time.Now())
	rowScope, err := e.Scope(context.Background(), in, "services")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ManagedAccounts(context.Background(), rowScope, 7); err == nil {
		t.Error("a services scope was used on accounts")
	}
	if _, err := s.ManagedAccounts(context.Background(), policy.Scope{}, 7); err == nil {
		t.Error("the zero scope was used on accounts")
	}
	ms, err := e.ManagementScope(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.ManagedAccounts(context.Background(), ms); err != nil || len(got) != 0 {
		t.Errorf("no ids: %v, %v", got, err)
	}
	if _, _, err := s.ScopedIDs(context.Background(), ms, []int64{7}); err == nil {
		t.Error("ScopedIDs took the management scope as a tenant resource")
	}
}
