package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// exitWidens is the exit status of `policy diff` when NEW grants anything
// OLD did not (DESIGN §10): a CI gate for "this change widens access".
const exitWidens = 3

// diffReport is the outcome of `policy diff`, and its --json document.
type diffReport struct {
	Old diffSet `json:"old"`
	New diffSet `json:"new"`
	// Mode is "database" (tokens and accounts of --database-url) or
	// "synthetic" (policy.SyntheticPrincipals and policy.SyntheticRows).
	Mode     string       `json:"mode"`
	Compared diffCompared `json:"compared"`
	// Widens: NEW allows a decision OLD denied, or admits a row OLD did
	// not (exit status 3).
	Widens    bool             `json:"widens"`
	Decisions []decisionChange `json:"decisions"`
	Rows      []rowChange      `json:"rows"`
	// NotCompared names what the diff does not look at.
	NotCompared []string `json:"not_compared"`
}

// diffSet names one of the two policy sets.
type diffSet struct {
	Path     string `json:"path"`
	Revision string `json:"revision"`
}

// diffCompared says how much was compared.
type diffCompared struct {
	// Callers are the tokens (database) or synthetic principals (each
	// asked with the tokens of policy.SyntheticTokens) whose decisions
	// were compared on every route.
	Callers   int `json:"callers"`
	Routes    int `json:"routes"`
	Decisions int `json:"decisions"`
	// Accounts are the accounts (or synthetic accounts) whose scopes were
	// compared on every resource of Resources.
	Accounts  int      `json:"accounts"`
	Resources []string `json:"resources"`
}

// decisionChange is a group of decisions that change the same way: one
// route, one account type, OLD's outcome and NEW's ("ALLOW" or the
// denial code).
type decisionChange struct {
	Route       string `json:"route"`
	AccountType string `json:"account_type"`
	Old         string `json:"old"`
	New         string `json:"new"`
	// Widens: OLD denied, NEW allows.
	Widens   bool         `json:"widens"`
	Count    int          `json:"count"`
	Examples []diffCaller `json:"examples"`
}

// diffCaller is an example caller of a decisionChange: a token of the
// database, or a synthetic principal with its token's permissions.
type diffCaller struct {
	TokenID     int64    `json:"token_id,omitempty"`
	AccountID   int64    `json:"account_id"`
	Username    string   `json:"username,omitempty"`
	Principal   string   `json:"principal,omitempty"`
	Permissions []string `json:"permissions,omitempty"`
}

// rowChange is the change of one account's scope of one resource: the
// rows NEW admits and OLD does not (Added; any makes NEW wider) and the
// reverse (Removed). Examples are row ids (database) or synthetic rows
// (objects of the scope's columns).
type rowChange struct {
	Resource    string   `json:"resource"`
	AccountID   int64    `json:"account_id"`
	Username    string   `json:"username,omitempty"`
	AccountType string   `json:"account_type"`
	Principal   string   `json:"principal,omitempty"`
	Added       rowDelta `json:"added"`
	Removed     rowDelta `json:"removed"`
}

// rowDelta is one direction of a rowChange.
type rowDelta struct {
	Count    int64 `json:"count"`
	Examples []any `json:"examples"`
}

// diffCallerInput is one caller whose decisions are compared.
type diffCallerInput struct {
	principal tenancy.Principal
	label     string
	// perms, when set, replaces the token's permissions for each route
	// (synthetic callers).
	perms func(tenancy.Route) [][]string
}

// diffAccount is one account whose scopes are compared.
type diffAccount struct {
	principal tenancy.Principal
	label     string
}

func runPolicyDiff(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("policy diff", "[--database-url U] [--json] OLD NEW",
		`Compare the policy set NEW with OLD (directories, or bundle files where the
policy loader takes them) before deploying it. Both sets are checked as serve
checks them (compile, their own tests, every scope translatable to SQL); a set
that fails is an error (exit 1).

With --database-url (or FLEET_DATABASE_URL, which backs it as for every
command; set it empty for a synthetic run), every token that can authenticate is asked every route
under both sets, and every account's row scope of every resource (and its
management scope over accounts) is compared in SQL: the rows NEW admits and OLD
does not, and the reverse, with counts and up to 5 example ids. Without it,
synthetic principals are used: every account type with every privilege set
(none, exactly one, both), in every state the policy reads (inactive, expired,
read-only, each account above inactive, expired or read-only), with the tokens
"*", "METHOD *", the route alone and none, and their scopes are compared on a
grid of synthetic rows.

Exit status 3 when NEW grants anything OLD did not (a decision denied by OLD
and allowed by NEW, or a row admitted by NEW and not by OLD); 0 otherwise,
also when NEW only narrows access; 1 on failure; 2 for a usage mistake.`)
	dbURL := strings.TrimSpace(getenv("FLEET_DATABASE_URL"))
	var asJSON bool
	cmd.fs.Var(databaseURLValue{&dbURL}, "database-url", "compare on the tokens, accounts and rows of this database, read only (FLEET_DATABASE_URL; synthetic principals when neither is set)")
	cmd.fs.BoolVar(&asJSON, "json", false, "write the report as one JSON document")
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(2, 2); err != nil {
		return err
	}
	if cmd.set("database-url") && strings.TrimSpace(dbURL) == "" {
		// An unset shell variable must not turn a database run into a
		// synthetic one without a word.
		return usagef(cmd.name, "%s: --database-url is empty (leave the flag out to compare synthetic principals)", cmd.name)
	}
	oldPath, newPath := cmd.fs.Arg(0), cmd.fs.Arg(1)
	oldE, err := diffEngine(ctx, "OLD", oldPath)
	if err != nil {
		return err
	}
	newE, err := diffEngine(ctx, "NEW", newPath)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	rep := &diffReport{
		Old:         diffSet{oldPath, oldE.Revision()},
		New:         diffSet{newPath, newE.Revision()},
		Decisions:   []decisionChange{},
		Rows:        []rowChange{},
		NotCompared: []string{"management decisions (data.fleet.manage.decision): they depend on the change asked for; compare them with the set's own tests and policy explain --action", "GET /me permissions beyond the route decisions they are made of"},
	}
	var callers []diffCallerInput
	var accounts []diffAccount
	var store *storage.Store
	if dbURL != "" {
		rep.Mode = "database"
		db := storage.Open(dbURL, storage.Options{MaxOpenConns: max(2, runtime.GOMAXPROCS(0))})
		defer db.Close()
		store = storage.NewStore(db)
		ps, err := store.ActivePrincipals(ctx, now)
		if err != nil {
			return fmt.Errorf("policy diff: tokens: %w", err)
		}
		for _, p := range ps {
			callers = append(callers, diffCallerInput{principal: p})
		}
		as, err := store.AccountPrincipals(ctx)
		if err != nil {
			return fmt.Errorf("policy diff: accounts: %w", err)
		}
		for _, a := range as {
			accounts = append(accounts, diffAccount{principal: a})
		}
	} else {
		rep.Mode = "synthetic"
		for _, sp := range policy.SyntheticPrincipals(now) {
			callers = append(callers, diffCallerInput{principal: sp.Principal, label: sp.Label, perms: policy.SyntheticTokens})
			accounts = append(accounts, diffAccount{principal: sp.Principal, label: sp.Label})
		}
	}
	if err := diffDecisions(ctx, oldE, newE, callers, now, rep); err != nil {
		return err
	}
	if err := diffRows(ctx, oldE, newE, store, accounts, now, rep); err != nil {
		return err
	}
	for _, d := range rep.Decisions {
		rep.Widens = rep.Widens || d.Widens
	}
	for _, r := range rep.Rows {
		rep.Widens = rep.Widens || r.Added.Count > 0
	}
	if asJSON {
		enc := json.NewEncoder(con.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := rep.write(con.out); err != nil {
		return err
	}
	if rep.Widens {
		return &statusError{code: exitWidens, err: errors.New("policy diff: NEW grants access that OLD does not")}
	}
	return nil
}

// diffEngine loads, compiles and checks one policy set as serve does (its
// own tests, every scope rule translatable by storage) without a cache or
// a decision log: the one way policy diff turns a path into a policy set.
func diffEngine(ctx context.Context, which, path string) (*policy.Engine, error) {
	e, err := policy.New(ctx, policy.Options{
		Dir: path, Resources: storage.Resources(), CompileScope: storage.CompileScope, CacheSize: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("policy diff: %s %s: %w", which, path, err)
	}
	return e, nil
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

// diffDecisions asks every caller's decision on every route under both
// sets and groups those that change.
func diffDecisions(ctx context.Context, oldE, newE *policy.Engine, callers []diffCallerInput, now time.Time, rep *diffReport) error {
	routes := tenancy.Routes()
	rep.Compared.Callers, rep.Compared.Routes = len(callers), len(routes)
	type change struct {
		key    [4]string
		caller diffCaller
	}
	var mu sync.Mutex
	var changes []change
	decisions := 0
	err := parallel(ctx, len(callers), func(i int) error {
		c := callers[i]
		var local []change
		n := 0
		permSets := [][]string{c.principal.Token.Permissions}
		for _, r := range routes {
			if c.perms != nil {
				permSets = c.perms(r)
			}
			for _, perms := range permSets {
				p := c.principal
				p.Token.Permissions = perms
				in := policy.NewInput(p, r.Method, r.Template, now)
				od, err := oldE.Decide(ctx, in)
				if err != nil {
					return fmt.Errorf("policy diff: OLD decision for %s on %s: %w", c.name(), r, err)
				}
				nd, err := newE.Decide(ctx, in)
				if err != nil {
					return fmt.Errorf("policy diff: NEW decision for %s on %s: %w", c.name(), r, err)
				}
				n++
				if outcome(od) == outcome(nd) {
					continue
				}
				ex := diffCaller{TokenID: p.Token.ID, AccountID: p.Account.ID, Username: p.Account.Username}
				if c.perms != nil {
					ex = diffCaller{AccountID: p.Account.ID, Principal: c.label, Permissions: slices.Clone(perms)}
				}
				local = append(local, change{[4]string{r.String(), string(p.Account.Type), outcome(od), outcome(nd)}, ex})
			}
		}
		mu.Lock()
		changes = append(changes, local...)
		decisions += n
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	rep.Compared.Decisions = decisions
	groups := map[[4]string]*decisionChange{}
	for _, c := range changes {
		g := groups[c.key]
		if g == nil {
			g = &decisionChange{Route: c.key[0], AccountType: c.key[1], Old: c.key[2], New: c.key[3],
				Widens: c.key[2] != "ALLOW" && c.key[3] == "ALLOW", Examples: []diffCaller{}}
			groups[c.key] = g
		}
		g.Count++
		g.Examples = append(g.Examples, c.caller)
	}
	for _, g := range groups {
		sort.Slice(g.Examples, func(i, j int) bool {
			a, b := g.Examples[i], g.Examples[j]
			if a.TokenID != b.TokenID {
				return a.TokenID < b.TokenID
			}
			if a.Principal != b.Principal {
				return a.Principal < b.Principal
			}
			return strings.Join(a.Permissions, ",") < strings.Join(b.Permissions, ",")
		})
		g.Examples = g.Examples[:min(len(g.Examples), storage.DiffExamples)]
		rep.Decisions = append(rep.Decisions, *g)
	}
	sort.Slice(rep.Decisions, func(i, j int) bool {
		a, b := rep.Decisions[i], rep.Decisions[j]
		if a.Widens != b.Widens {
			return a.Widens
		}
		return fmt.Sprint(a.Route, a.AccountType, a.Old, a.New) < fmt.Sprint(b.Route, b.AccountType, b.Old, b.New)
	})
	return nil
}

func (c diffCallerInput) name() string {
	if c.label != "" {
		return c.label
	}
	return fmt.Sprintf("token %d (account %d)", c.principal.Token.ID, c.principal.Account.ID)
}

// diffRows compares every account's scope of every resource, and its
// management scope, under both sets: in SQL on the database's rows
// (storage.DiffScopes), or on policy.SyntheticRows with the sets' own
// rules.
func diffRows(ctx context.Context, oldE, newE *policy.Engine, store *storage.Store, accounts []diffAccount, now time.Time, rep *diffReport) error {
	resources := append(storage.Resources(), policy.ManagementResource)
	for _, r := range resources {
		rep.Compared.Resources = append(rep.Compared.Resources, string(r))
	}
	rep.Compared.Accounts = len(accounts)
	var oracles map[policy.Resource][2]*policy.RowOracle
	if store == nil {
		oracles = map[policy.Resource][2]*policy.RowOracle{}
		for _, r := range resources {
			o, err := oldE.NewRowOracle(ctx, r)
			if err != nil {
				return fmt.Errorf("policy diff: OLD rule of %s: %w", r, err)
			}
			n, err := newE.NewRowOracle(ctx, r)
			if err != nil {
				return fmt.Errorf("policy diff: NEW rule of %s: %w", r, err)
			}
			oracles[r] = [2]*policy.RowOracle{o, n}
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
			ch := rowChange{Resource: string(r), AccountID: a.principal.Account.ID, AccountType: string(a.principal.Account.Type), Principal: a.label}
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

func idDelta(d storage.RowDelta) rowDelta {
	out := rowDelta{Count: d.Count, Examples: make([]any, len(d.Examples))}
	for i, id := range d.Examples {
		out.Examples[i] = id
	}
	return out
}

// syntheticDelta compares two scopes of one synthetic account on the
// synthetic rows of its resource, each row decided by the sets' own rules
// (policy.RowOracle). Two scopes with the same condition admit the same
// rows: the grid is not evaluated then.
func syntheticDelta(ctx context.Context, oracles [2]*policy.RowOracle, in policy.Input, oldScope, newScope policy.Scope) (rowDelta, rowDelta, error) {
	added, removed := rowDelta{Examples: []any{}}, rowDelta{Examples: []any{}}
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
	for _, row := range policy.SyntheticRows(oldScope.Resource()) {
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

// write prints the report as tables for people.
func (rep *diffReport) write(w io.Writer) error {
	fmt.Fprintf(w, "OLD %s (revision %.12s)\nNEW %s (revision %.12s)\n", rep.Old.Path, rep.Old.Revision, rep.New.Path, rep.New.Revision)
	c := rep.Compared
	who := "tokens"
	if rep.Mode == "synthetic" {
		who = "synthetic principals (4 tokens each)"
	}
	fmt.Fprintf(w, "compared (%s): %d %s × %d routes = %d decisions; %d accounts × %d scopes (%s)\n",
		rep.Mode, c.Callers, who, c.Routes, c.Decisions, c.Accounts, len(c.Resources), strings.Join(c.Resources, ", "))
	if len(rep.Decisions) == 0 && len(rep.Rows) == 0 {
		fmt.Fprintln(w, "no changes")
		fmt.Fprintf(w, "not compared: %s\n", strings.Join(rep.NotCompared, "; "))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ndecisions that change: %d groups\n", len(rep.Decisions))
	if len(rep.Decisions) > 0 {
		fmt.Fprintln(tw, "ROUTE\tACCOUNT TYPE\tOLD\tNEW\tCOUNT\t\tEXAMPLES")
		for _, d := range rep.Decisions {
			mark := ""
			if d.Widens {
				mark = "WIDENS"
			}
			ex := make([]string, len(d.Examples))
			for i, e := range d.Examples {
				ex[i] = e.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.Route, d.AccountType, d.Old, d.New, d.Count, mark, strings.Join(ex, "; "))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nrows that change: %d account scopes\n", len(rep.Rows))
	if len(rep.Rows) > 0 {
		fmt.Fprintln(tw, "RESOURCE\tACCOUNT\tNEW ONLY\tOLD ONLY\t\tNEW-ONLY EXAMPLES\tOLD-ONLY EXAMPLES")
		for _, r := range rep.Rows {
			mark := ""
			if r.Added.Count > 0 {
				mark = "WIDENS"
			}
			acct := fmt.Sprintf("%d %s (%s)", r.AccountID, r.Username, r.AccountType)
			if r.Principal != "" {
				acct = r.Principal
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.Resource, acct, r.Added.Count, r.Removed.Count, mark,
				examples(r.Added.Examples), examples(r.Removed.Examples))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nnot compared: %s\n", strings.Join(rep.NotCompared, "; "))
	if rep.Widens {
		fmt.Fprintln(w, "verdict: NEW grants access that OLD does not (exit status 3)")
	} else {
		fmt.Fprintln(w, "verdict: NEW grants nothing that OLD does not (it only narrows or changes denial codes)")
	}
	return nil
}

func (c diffCaller) String() string {
	if c.Principal != "" {
		return fmt.Sprintf("%s, token %q", c.Principal, strings.Join(c.Permissions, " "))
	}
	return fmt.Sprintf("token %d (account %d %s)", c.TokenID, c.AccountID, c.Username)
}

// examples prints example ids or synthetic rows.
func examples(ex []any) string {
	if len(ex) == 0 {
		return "-"
	}
	parts := make([]string, len(ex))
	for i, e := range ex {
		if m, ok := e.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			kv := make([]string, len(keys))
			for j, k := range keys {
				v := m[k]
				if v == nil {
					v = "null"
				}
				kv[j] = fmt.Sprintf("%s=%v", k, v)
			}
			parts[i] = "{" + strings.Join(kv, " ") + "}"
			continue
		}
		parts[i] = fmt.Sprint(e)
	}
	return strings.Join(parts, ", ")
}
