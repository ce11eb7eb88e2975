package policydiff

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// diffDecisions asks every caller's decision on every route under both
// sets and groups those that change.
func diffDecisions(ctx context.Context, oldE, newE *policy.Engine, callers []caller, now time.Time, rep *Report) error {
	routes := tenancy.Routes()
	rep.Compared.Callers, rep.Compared.Routes = len(callers), len(routes)
	type change struct {
		key    [4]string
		caller Caller
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
				ex := Caller{TokenID: p.Token.ID, AccountID: p.Account.ID, Username: p.Account.Username}
				if c.perms != nil {
					ex = Caller{AccountID: p.Account.ID, Principal: c.label, Permissions: slices.Clone(perms)}
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
	groups := map[[4]string]*DecisionChange{}
	for _, c := range changes {
		g := groups[c.key]
		if g == nil {
			g = &DecisionChange{Route: c.key[0], AccountType: c.key[1], Old: c.key[2], New: c.key[3],
				Widens: c.key[2] != "ALLOW" && c.key[3] == "ALLOW", Examples: []Caller{}}
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

func (c caller) name() string {
	if c.label != "" {
		return c.label
	}
	return fmt.Sprintf("token %d (account %d)", c.principal.Token.ID, c.principal.Account.ID)
}
