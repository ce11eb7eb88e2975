package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/tooling/oracle"
)

const (
	diffSeed       = 20261122
	diffPrincipals = 1000
	// diffSample is how many rows of a resource one principal is checked
	// on: half among rows of accounts related to it, half at random.
	diffSample = 40
)

// TestScopeDifferential checks the SQL translation against the policy
// itself: for many random principals and rows, the rows that the SQL scope
// returns are exactly the rows for which the Rego rule, evaluated on the
// row's known values, holds.
func TestScopeDifferential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	s, db := newStore(t)
	e := newEngine(t)
	r := rand.New(rand.NewPCG(diffSeed, diffSeed))
	w := buildWorld(t, db, r)
	counts := ""
	for _, resource := range storage.Resources() {
		counts += fmt.Sprintf(", %d %s", len(w.rows[string(resource)]), resource)
	}
	t.Logf("world: %d accounts, %d devices%s (%v)", len(w.accounts), len(w.allIMEIs), counts, time.Since(start))

	oracles := map[string]*oracle.Oracle{}
	for _, resource := range storage.Resources() {
		// The world must hold rows of every registered resource: a resource
		// added without them would be checked on nothing.
		if len(w.rows[string(resource)]) == 0 {
			t.Fatalf("the differential world has no %s rows", resource)
		}
		o, err := oracle.New(ctx, e, resource)
		if err != nil {
			t.Fatal(err)
		}
		oracles[string(resource)] = o
	}

	type check struct {
		in       policy.Input
		resource string
		sample   []worldRow
	}
	var checks []check
	for range diffPrincipals {
		in := w.randomPrincipal(r)
		for _, resource := range storage.Resources() {
			checks = append(checks, check{in, string(resource), w.sample(r, in, string(resource))})
		}
	}
	jobs := make(chan check)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, returned, failures := 0, 0, 0
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for c := range jobs {
				want, err := w.admitted(ctx, oracles[c.resource], c.in, c.resource, c.sample)
				if err != nil {
					t.Error(err)
					continue
				}
				scope, err := e.Scope(ctx, c.in, policy.Resource(c.resource))
				if err != nil {
					t.Errorf("scope of %s for %s: %v", c.resource, principalString(c.in), err)
					continue
				}
				ids := make([]int64, len(c.sample))
				for i, row := range c.sample {
					ids[i] = row.id
				}
				got, sql, err := s.ScopedIDs(ctx, scope, ids)
				if err != nil {
					t.Errorf("SQL of %s for %s: %v", c.resource, principalString(c.in), err)
					continue
				}
				mu.Lock()
				admitted += len(want)
				returned += len(got)
				if !slices.Equal(got, want) && failures < 10 {
					failures++
					t.Errorf("%s for %s:\nSQL: %s\nonly SQL: %v\nonly policy: %v", c.resource, principalString(c.in), sql,
						minus(got, want), minus(want, got))
				}
				mu.Unlock()
			}
		})
	}
	for _, c := range checks {
		jobs <- c
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d principals × %d resources, %d rows checked, %d admitted, %d returned (%v)",
		diffPrincipals, len(storage.Resources()), len(checks)*diffSample, admitted, returned, time.Since(start))
	if admitted == 0 {
		t.Fatal("no row was ever admitted: the test checks nothing")
	}
}

// randomPrincipal is a random account of a random type, sometimes inactive
// or expired, with random privileges; now and then an account that does
// not exist.
func (w *world) randomPrincipal(r *rand.Rand) policy.Input {
	types := []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount}
	typ := types[r.IntN(len(types))]
	var a worldAccount
	if r.IntN(30) == 0 {
		a = worldAccount{id: 900000 + r.Int64N(1000), typ: typ, managerID: r.Int64N(3)}
	} else {
		of := w.byType[typ]
		a = of[r.IntN(len(of))]
	}
	privs := []string{}
	for _, p := range []string{"reports", "event_notifications", "Reports"} {
		if r.IntN(2) == 0 {
			privs = append(privs, p)
		}
	}
	p := tenancy.Principal{
		Token: tenancy.Token{ID: r.Int64N(100), AccountID: a.id, Permissions: []string{"*"}},
		Account: tenancy.Account{ID: a.id, Type: a.typ, ManagerID: a.managerID, Active: r.IntN(8) != 0,
			ReadOnly: r.IntN(4) == 0, Privileges: privs},
	}
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	if r.IntN(10) == 0 {
		p.Account.AccountExpire, p.Account.ExpireDate = true, today.AddDate(0, 0, -1)
	}
	return policy.NewInput(p, "GET", "/services", today)
}

// sample picks up to diffSample rows of resource: half owned by accounts
// related to the principal (itself, its manager, the accounts it
// manages), half at random.
func (w *world) sample(r *rand.Rand, in policy.Input, resource string) []worldRow {
	all := w.rows[resource]
	var related []worldRow
	for _, row := range all {
		owner := w.byID[row.account]
		if row.account == in.Account.ID || row.account == in.Account.ManagerID || owner.managerID == in.Account.ID {
			related = append(related, row)
		}
	}
	seen := map[int64]bool{}
	var out []worldRow
	for i := 0; len(out) < diffSample && i < 4*diffSample; i++ {
		from := all
		if i%2 == 0 && len(related) > 0 {
			from = related
		}
		row := from[r.IntN(len(from))]
		if !seen[row.id] {
			seen[row.id] = true
			out = append(out, row)
		}
	}
	slices.SortFunc(out, func(a, b worldRow) int { return int(a.id - b.id) })
	return out
}

// rowInput is the row's known input for the policy: its columns and the
// virtual columns manager_id and granted_to, computed here from the world
// rather than by SQL.
func (w *world) rowInput(in policy.Input, resource string, row worldRow) map[string]any {
	m := map[string]any{"account_id": row.account, "manager_id": nil, "granted_to": nil}
	if owner := w.byID[row.account]; owner.managerID != 0 {
		m["manager_id"] = owner.managerID
	}
	switch w.imeiKind[resource] {
	case imeiScalar:
		m["imei"] = row.imeis[0]
	case imeiList:
		list := make([]any, len(row.imeis))
		for i, d := range row.imeis {
			list[i] = d
		}
		m["imei"] = list
	}
	if in.Account.Type == string(tenancy.Subaccount) {
		granted := true
		for _, d := range row.imeis {
			granted = granted && w.grants[in.Account.ID][d]
		}
		if granted {
			m["granted_to"] = in.Account.ID
		}
	}
	return m
}

// admitted returns the ids of the rows that the policy admits, evaluating
// each distinct row input once.
func (w *world) admitted(ctx context.Context, o *oracle.Oracle, in policy.Input, resource string, rows []worldRow) ([]int64, error) {
	memo := map[string]bool{}
	out := []int64{}
	for _, row := range rows {
		ri := w.rowInput(in, resource, row)
		b, err := json.Marshal(ri)
		if err != nil {
			return nil, err
		}
		ok, seen := memo[string(b)]
		if !seen {
			if ok, err = o.Admits(ctx, in, ri); err != nil {
				return nil, fmt.Errorf("admits %s row %d for %s: %w", resource, row.id, principalString(in), err)
			}
			memo[string(b)] = ok
		}
		if ok {
			out = append(out, row.id)
		}
	}
	return out, nil
}

func principalString(in policy.Input) string {
	b, _ := json.Marshal(in.Account)
	return string(b)
}

// minus returns the ids of a that are not in b.
func minus(a, b []int64) []int64 {
	var out []int64
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
