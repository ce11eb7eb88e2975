// Package synthetic makes up what `fleetapi policy diff` compares two
// policy sets on when it has no database: principals of a small account
// tree in every state the policy reads, the tokens each is asked with, and
// a grid of rows for each scope. It is tooling: the request path never
// imports it (cmd/fleetapi/layout_test.go).
package synthetic

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Principal is a made-up caller that `fleetapi policy diff` compares two
// policy sets on when it has no database: Label names it for people
// ("subaccount 9 [reports] read-only, under user 7 inactive").
type Principal struct {
	Label     string
	Principal tenancy.Principal
}

// tree is the account tree of the synthetic principals: an admin
// (1), a manager (3) under it, a user (7) under the manager, a user (8)
// directly under the admin, and a subaccount (9) of user 7.
var tree = []tenancy.Account{
	{ID: 1, Type: tenancy.Admin},
	{ID: 3, Type: tenancy.Manager, ManagerID: 1},
	{ID: 7, Type: tenancy.User, ManagerID: 3},
	{ID: 8, Type: tenancy.User, ManagerID: 1},
	{ID: 9, Type: tenancy.Subaccount, ManagerID: 7},
}

// AccountIDs are the account ids of the synthetic principals, the values
// a synthetic row's account columns take (with one id of no synthetic
// account, OtherID).
func AccountIDs() []int64 {
	out := make([]int64, len(tree))
	for i, a := range tree {
		out[i] = a.ID
	}
	return out
}

// OtherID is an account id outside the synthetic tree: another tenant's.
const OtherID = 42

// privileges are the privilege sets every synthetic account is
// tried with: none, exactly one of each, both.
var privileges = [][]string{{}, {"reports"}, {"event_notifications"}, {"event_notifications", "reports"}}

// Principals returns the callers policy diff compares two sets on
// without a database: every account of a small tree (an admin; a manager
// under it; a user under the manager and one directly under the admin; a
// subaccount of the first user) with every privilege set (none, exactly
// one, both), each in every state the policy reads: usable, inactive,
// expired, read-only, and each account above it in turn inactive, expired
// or read-only. Expiry is set as the database has it (account_expire and a
// date before today). They carry no token: the caller sets the token's
// permissions.
func Principals(today time.Time) []Principal {
	byID := map[int64]tenancy.Account{}
	for _, a := range tree {
		a.Active = true
		a.Username = fmt.Sprintf("%s-%d", a.Type, a.ID)
		byID[a.ID] = a
	}
	yesterday := today.AddDate(0, 0, -1)
	type state struct {
		label string
		apply func(*tenancy.Account)
	}
	states := []state{
		{"", func(*tenancy.Account) {}},
		{"inactive", func(a *tenancy.Account) { a.Active = false }},
		{"expired", func(a *tenancy.Account) { a.AccountExpire, a.ExpireDate = true, yesterday }},
		{"read-only", func(a *tenancy.Account) { a.ReadOnly = true }},
	}
	var out []Principal
	for _, base := range tree {
		var chain []tenancy.Account
		for id := base.ManagerID; id != 0; id = byID[id].ManagerID {
			chain = append(chain, byID[id])
		}
		for _, privs := range privileges {
			name := fmt.Sprintf("%s %d [%s]", base.Type, base.ID, strings.Join(privs, " "))
			// the account's own states, then each ancestor's
			for _, st := range states {
				acct := byID[base.ID]
				acct.Privileges = slices.Clone(privs)
				st.apply(&acct)
				label := strings.TrimSpace(name + " " + st.label)
				out = append(out, Principal{label, tenancy.Principal{Account: acct, Ancestors: slices.Clone(chain)}})
			}
			for i := range chain {
				for _, st := range states[1:] {
					acct := byID[base.ID]
					acct.Privileges = slices.Clone(privs)
					ancestors := slices.Clone(chain)
					st.apply(&ancestors[i])
					label := fmt.Sprintf("%s, under %s %d %s", name, ancestors[i].Type, ancestors[i].ID, st.label)
					out = append(out, Principal{label, tenancy.Principal{Account: acct, Ancestors: ancestors}})
				}
			}
		}
	}
	return out
}

// Tokens returns the token permission lists a synthetic principal
// is tried with on route r: every route ("*"), every route of r's method
// ("GET *"), r alone, and none.
func Tokens(r tenancy.Route) [][]string {
	return [][]string{{"*"}, {r.Method + " *"}, {r.String()}, {}}
}

// Rows returns the rows of resource that policy diff checks a
// synthetic principal's scope on without a database: every combination of
// the columns a scope of resource may name (for a tenant resource
// account_id, manager_id and granted_to; for the management scope id,
// manager_id, type and grand_manager_id), each an id of the synthetic
// tree, OtherID or null, and type each account type, an unknown
// one or null. The rule decides on these columns alone (docs/design.md §6: a scope
// names only whitelisted columns and compares them with known values), so
// the grid tells apart every condition on the ids of the synthetic
// principals.
func Rows(resource policy.Resource) []map[string]any {
	ids := []any{nil, int64(OtherID)}
	for _, id := range AccountIDs() {
		ids = append(ids, id)
	}
	cols := []string{"account_id", "manager_id", "granted_to"}
	values := map[string][]any{"account_id": ids, "manager_id": ids, "granted_to": ids}
	if resource == policy.ManagementResource {
		cols = []string{"id", "manager_id", "type", "grand_manager_id"}
		types := []any{nil, "reseller"}
		for _, t := range []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount} {
			types = append(types, string(t))
		}
		values = map[string][]any{"id": ids, "manager_id": ids, "type": types, "grand_manager_id": ids}
	}
	rows := []map[string]any{{}}
	for _, c := range cols {
		var next []map[string]any
		for _, r := range rows {
			for _, v := range values[c] {
				n := make(map[string]any, len(r)+1)
				for k, x := range r {
					n[k] = x
				}
				n[c] = v
				next = append(next, n)
			}
		}
		rows = next
	}
	return rows
}
