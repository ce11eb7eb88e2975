package policydiff

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tooling/oracle"
	"github.com/fleetapi/fleetapi/tooling/synthetic"
)

// diffRows compares every account's scope of every resource, and its
// management scope, under both sets: in SQL on the database's rows
// (storage.DiffScopes), or on synthetic.Rows with the sets' own
// rules.
func diffRows(ctx context.Context, oldE, newE *policy.Engine, store *storage.Store, accounts []account, now time.Time, rep *Report) error {
	resources := append(storage.Resources(), policy.ManagementResource)
	for _, r := range resources {
		rep.Compared.Resources = append(rep.Compared.Resources, string(r))
	}
	rep.Compared.Accounts = len(accounts)
	var oracles map[policy.Resource][2]*oracle.Oracle
	if store == nil {
		oracles = map[policy.Resource][2]*oracle.Oracle{}
		for _, r := range resources {
			o, err := oracle.New(ctx, oldE, r)
			if err != nil {
				return fmt.Errorf("policy diff: OLD rule of %s: %w", r, err)
			}
			n, err := oracle.New(ctx, newE, r)
			if err != nil {
				return fmt.Errorf("policy diff: NEW rule of %s: %w", r, err)
			}
			oracles[r] = [2]*oracle.Oracle{o, n}
		}
	}
	var mu sync.Mutex
	err := parallel(ctx, len(accounts), func(i int) error {
		a := accounts[i]
		in := policy.NewInput(a.principal, "", "", now)
		for _, r := range resources {
			oldScope, err := diffScope(ctx, oldE, in, r)
			if err != nil {
				return fmt.Errorf("policy diff: OLD scope of %s for account %d: %w", r, a.principal.Account.ID, err)
			}
			newScope, err := diffScope(ctx, newE, in, r)
			if err != nil {
				return fmt.Errorf("policy diff: NEW scope of %s for account %d: %w", r, a.principal.Account.ID, err)
			}
			ch := RowChange{Resource: string(r), AccountID: a.principal.Account.ID, AccountType: string(a.principal.Account.Type), Principal: a.label}
			if a.label == "" {
				ch.Username = a.principal.Account.Username
			}
			if store != nil {
				added, removed, err := store.DiffScopes(ctx, oldScope, newScope)
				if err != nil {
					return fmt.Errorf("policy diff: rows of %s for account %d: %w", r, a.principal.Account.ID, err)
				}
				ch.Added, ch.Removed = idDelta(added), idDelta(removed)
			} else if ch.Added, ch.Removed, err = syntheticDelta(ctx, oracles[r], in, oldScope, newScope); err != nil {
				return fmt.Errorf("policy diff: rows of %s for %s: %w", r, a.label, err)
			}
			if ch.Added.Count == 0 && ch.Removed.Count == 0 {
				continue
			}
			mu.Lock()
			rep.Rows = append(rep.Rows, ch)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(rep.Rows, func(i, j int) bool {
		a, b := rep.Rows[i], rep.Rows[j]
		if (a.Added.Count > 0) != (b.Added.Count > 0) {
			return a.Added.Count > 0
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.AccountID != b.AccountID {
			return a.AccountID < b.AccountID
		}
		return a.Principal < b.Principal
	})
	return nil
}

// diffScope is the scope of resource r for in under e: a row scope, or
// the management scope.
func diffScope(ctx context.Context, e *policy.Engine, in policy.Input, r policy.Resource) (policy.Scope, error) {
	if r == policy.ManagementResource {
		return e.ManagementScope(ctx, in)
	}
	return e.Scope(ctx, in, r)
}

func idDelta(d storage.RowDelta) RowDelta {
	out := RowDelta{Count: d.Count, Examples: make([]any, len(d.Examples))}
	for i, id := range d.Examples {
		out.Examples[i] = id
	}
	return out
}

// syntheticDelta compares two scopes of one synthetic account on the
// synthetic rows of its resource, each row decided by the sets' own rules
// (oracle.Oracle). Two scopes with the same condition admit the same
// rows: the grid is not evaluated then.
func syntheticDelta(ctx context.Context, oracles [2]*oracle.Oracle, in policy.Input, oldScope, newScope policy.Scope) (RowDelta, RowDelta, error) {
	added, removed := RowDelta{Examples: []any{}}, RowDelta{Examples: []any{}}
	oj, err := json.Marshal(oldScope)
	if err != nil {
		return added, removed, err
	}
	nj, err := json.Marshal(newScope)
	if err != nil {
		return added, removed, err
	}
	if string(oj) == string(nj) {
		return added, removed, nil
	}
	for _, row := range synthetic.Rows(oldScope.Resource()) {
		o, err := oracles[0].Admits(ctx, in, row)
		if err != nil {
			return added, removed, err
		}
		n, err := oracles[1].Admits(ctx, in, row)
		if err != nil {
			return added, removed, err
		}
		switch {
		case n && !o:
			added.Count++
			if len(added.Examples) < storage.DiffExamples {
				added.Examples = append(added.Examples, row)
			}
		case o && !n:
			removed.Count++
			if len(removed.Examples) < storage.DiffExamples {
				removed.Examples = append(removed.Examples, row)
			}
		}
	}
	return added, removed, nil
}
