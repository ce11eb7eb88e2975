// Package policydiff compares two policy sets before one replaces the
// other (`fleetapi policy diff`): the route decisions and the rows of
// every scope that NEW grants or takes away, on a database's tokens,
// accounts and rows or on synthetic principals and rows. It is tooling:
// the request path never imports it (cmd/fleetapi/layout_test.go).
package policydiff

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/tooling/synthetic"
)

// Report is the outcome of `policy diff`, and its --json document.
type Report struct {
	Old Side `json:"old"`
	New Side `json:"new"`
	// Mode is "database" (tokens and accounts of --database-url) or
	// "synthetic" (synthetic.Principals and synthetic.Rows).
	Mode     string   `json:"mode"`
	Compared Compared `json:"compared"`
	// Widens: NEW allows a decision OLD denied, or admits a row OLD did
	// not (exit status 3).
	Widens    bool             `json:"widens"`
	Decisions []DecisionChange `json:"decisions"`
	Rows      []RowChange      `json:"rows"`
	// NotCompared names what the diff does not look at.
	NotCompared []string `json:"not_compared"`
}

// Side names one of the two policy sets.
type Side struct {
	Path     string `json:"path"`
	Revision string `json:"revision"`
}

// Compared says how much was compared.
type Compared struct {
	// Callers are the tokens (database) or synthetic principals (each
	// asked with the tokens of synthetic.Tokens) whose decisions
	// were compared on every route.
	Callers   int `json:"callers"`
	Routes    int `json:"routes"`
	Decisions int `json:"decisions"`
	// Accounts are the accounts (or synthetic accounts) whose scopes were
	// compared on every resource of Resources.
	Accounts  int      `json:"accounts"`
	Resources []string `json:"resources"`
}

// DecisionChange is a group of decisions that change the same way: one
// route, one account type, OLD's outcome and NEW's ("ALLOW" or the
// denial code).
type DecisionChange struct {
	Route       string `json:"route"`
	AccountType string `json:"account_type"`
	Old         string `json:"old"`
	New         string `json:"new"`
	// Widens: OLD denied, NEW allows.
	Widens   bool     `json:"widens"`
	Count    int      `json:"count"`
	Examples []Caller `json:"examples"`
}

// Caller is an example caller of a DecisionChange: a token of the
// database, or a synthetic principal with its token's permissions.
type Caller struct {
	TokenID     int64    `json:"token_id,omitempty"`
	AccountID   int64    `json:"account_id"`
	Username    string   `json:"username,omitempty"`
	Principal   string   `json:"principal,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
}

// RowChange is the change of one account's scope of one resource: the
// rows NEW admits and OLD does not (Added; any makes NEW wider) and the
// reverse (Removed). Examples are row ids (database) or synthetic rows
// (objects of the scope's columns).
type RowChange struct {
	Resource    string   `json:"resource"`
	AccountID   int64    `json:"account_id"`
	Username    string   `json:"username,omitempty"`
	AccountType string   `json:"account_type"`
	Principal   string   `json:"principal,omitempty"`
	Added       RowDelta `json:"added"`
	Removed     RowDelta `json:"removed"`
}

// RowDelta is one direction of a RowChange.
type RowDelta struct {
	Count    int64 `json:"count"`
	Examples []any `json:"examples"`
}

// caller is one caller whose decisions are compared.
type caller struct {
	principal tenancy.Principal
	label     string
	// perms, when set, replaces the token's permissions for each route
	// (synthetic callers).
	perms func(tenancy.Route) [][]string
}

// account is one account whose scopes are compared.
type account struct {
	principal tenancy.Principal
	label     string
}

// Options are what Compare compares.
type Options struct {
	// Old and New are the two policy sets, each loaded and checked as
	// serve checks a set; OldPath and NewPath name them in the report.
	Old, New         *policy.Engine
	OldPath, NewPath string
	// Store, when set, is the database whose tokens, accounts and rows are
	// compared (read only); nil compares synthetic principals on
	// synthetic rows.
	Store *storage.Store
	// Now is the day the principals' expiry is judged on.
	Now time.Time
}

// Compare asks every caller's decision on every route, and every
// account's scope of every resource and its management scope, under both
// sets, and reports what changes: with a Store on the database's tokens,
// accounts and rows (in SQL, storage.DiffScopes), without one on the
// synthetic principals and rows (package synthetic, decided by the sets'
// own rules through package oracle). Report.Widens is set when NEW allows
// a decision OLD denied or admits a row OLD did not.
func Compare(ctx context.Context, opts Options) (*Report, error) {
	oldE, newE, now := opts.Old, opts.New, opts.Now
	rep := &Report{
		Old:         Side{opts.OldPath, oldE.Revision()},
		New:         Side{opts.NewPath, newE.Revision()},
		Decisions:   []DecisionChange{},
		Rows:        []RowChange{},
		NotCompared: []string{"management decisions (data.fleet.manage.decision): they depend on the change asked for; compare them with the set's own tests and policy explain --action", "GET /me permissions beyond the route decisions they are made of"},
	}
	var callers []caller
	var accounts []account
	if store := opts.Store; store != nil {
		rep.Mode = "database"
		ps, err := store.ActivePrincipals(ctx, now)
		if err != nil {
			return nil, fmt.Errorf("policy diff: tokens: %w", err)
		}
		for _, p := range ps {
			callers = append(callers, caller{principal: p})
		}
		as, err := store.AccountPrincipals(ctx)
		if err != nil {
			return nil, fmt.Errorf("policy diff: accounts: %w", err)
		}
		for _, a := range as {
			accounts = append(accounts, account{principal: a})
		}
	} else {
		rep.Mode = "synthetic"
		for _, sp := range synthetic.Principals(now) {
			callers = append(callers, caller{principal: sp.Principal, label: sp.Label, perms: synthetic.Tokens})
			accounts = append(accounts, account{principal: sp.Principal, label: sp.Label})
		}
	}
	if err := diffDecisions(ctx, oldE, newE, callers, now, rep); err != nil {
		return nil, err
	}
	if err := diffRows(ctx, oldE, newE, opts.Store, accounts, now, rep); err != nil {
		return nil, err
	}
	for _, d := range rep.Decisions {
		rep.Widens = rep.Widens || d.Widens
	}
	for _, r := range rep.Rows {
		rep.Widens = rep.Widens || r.Added.Count > 0
	}
	return rep, nil
}

// parallel runs fn(0..n-1) on GOMAXPROCS workers and returns the first
// error (after which no new call starts), or ctx's.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil }
	jobs := make(chan int)
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range jobs {
				if failed() {
					continue
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		if failed() || ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// outcome is a decision as the diff shows it: ALLOW or the denial code.
func outcome(d policy.Decision) string {
	if d.Allow {
		return "ALLOW"
	}
	return d.Code
}
