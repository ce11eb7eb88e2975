package storage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/tooling/oracle"
)

// policyValue evaluates rule of e's policy set on an empty input.
func policyValue[T any](t *testing.T, e *policy.Engine, rule string) T {
	t.Helper()
	ctx := context.Background()
	q, err := e.PrepareRule(ctx, rule)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := q.Eval(ctx, rego.EvalInput(map[string]any{}))
	if err != nil || len(rs) != 1 || len(rs[0].Expressions) != 1 {
		t.Fatalf("%s: %v, %v", rule, rs, err)
	}
	var out T
	b, err := jsonRoundTrip(rs[0].Expressions[0].Value, &out)
	if err != nil {
		t.Fatalf("%s: %s: %v", rule, b, err)
	}
	return out
}

// TestScopeRulesAskForTheirRoutePrivilege ties each scope rule to the
// privilege its routes need (authz.rego route_privilege: reports,
// event_notifications or none), derived for every declared resource with
// a scope rule and every route of tenancy.Routes under /<resource>: a
// subaccount with each combination of the policy's privileges
// (all_privileges) is admitted to a row of its parent granted to it
// exactly when it holds the route's privilege (always for a route that
// needs none). A new rule that copies reports' holds("reports") for a
// route needing no privilege, or forgets the holds of a route needing
// one, fails here, whatever its own Rego tests say.
func TestScopeRulesAskForTheirRoutePrivilege(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t)
	routePrivilege := policyValue[map[string]string](t, e, "data.fleet.authz.route_privilege")
	privileges := policyValue[[]string](t, e, "data.fleet.authz.all_privileges")
	// The routes no subaccount may use (authz.rego not_for_subaccounts: the
	// writes of docs/design.md §15) ask for no privilege: none admits them.
	notForSubaccounts := policyValue[[]string](t, e, "data.fleet.authz.not_for_subaccounts")
	if len(routePrivilege) == 0 || len(privileges) == 0 {
		t.Fatalf("route_privilege %v, all_privileges %v", routePrivilege, privileges)
	}
	// Every route of route_privilege is a route of the API.
	for route := range routePrivilege {
		if !slices.ContainsFunc(tenancy.Routes(), func(r tenancy.Route) bool { return r.String() == route }) {
			t.Errorf("route_privilege names %q, which is not in tenancy.Routes()", route)
		}
	}
	// Every subset of the privileges, from none to all.
	var combinations [][]string
	for mask := range 1 << len(privileges) {
		held := []string{}
		for i, p := range privileges {
			if mask&(1<<i) != 0 {
				held = append(held, p)
			}
		}
		combinations = append(combinations, held)
	}
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	const manager, parent, sub = 1, 2, 3
	checked := 0
	for _, d := range storage.Descriptors() {
		resource := d.Resource()
		if !slices.Contains(e.Resources(), resource) {
			continue // no scope rule of its own (scoped by the management scope)
		}
		// The privilege the resource's routes need; they must agree.
		need, routes := "", []string{}
		for _, r := range tenancy.Routes() {
			if r.Template != "/"+string(resource) && !strings.HasPrefix(r.Template, "/"+string(resource)+"/") ||
				slices.Contains(notForSubaccounts, r.String()) {
				continue
			}
			p := routePrivilege[r.String()]
			if len(routes) > 0 && p != need {
				t.Errorf("%s: the routes %v need privilege %q but %s needs %q: one scope rule cannot ask for both", resource, routes, need, r, p)
			}
			need = p
			routes = append(routes, r.String())
		}
		if len(routes) == 0 {
			continue // a resource without a client route of its own
		}
		o, err := oracle.New(ctx, e, resource)
		if err != nil {
			t.Fatal(err)
		}
		row := map[string]any{"account_id": parent, "manager_id": manager, "granted_to": sub}
		if resource == "webhooks" {
			// a subaccount's webhooks are its own, never its user's
			// (docs/decisions.md, issue 37): the row is the subaccount's
			row = map[string]any{"account_id": sub, "manager_id": parent}
		}
		for _, held := range combinations {
			p := tenancy.Principal{
				Token:   tenancy.Token{ID: 1, AccountID: sub, Permissions: []string{"*"}},
				Account: tenancy.Account{ID: sub, Type: tenancy.Subaccount, ManagerID: parent, Active: true, Privileges: held},
			}
			route := strings.SplitN(routes[0], " ", 2)
			admitted, err := o.Admits(ctx, policy.NewInput(p, route[0], route[1], today), row)
			if err != nil {
				t.Fatal(err)
			}
			want := need == "" || slices.Contains(held, need)
			checked++
			if admitted != want {
				fix := "must not ask for a privilege (no holds(...) in its rule)"
				if need != "" {
					fix = fmt.Sprintf("must ask for %q (holds(%q) in its rule)", need, need)
				}
				t.Errorf("data.fleet.scope.%s admits a row of its parent granted to a subaccount holding %v: %v, want %v: "+
					"its routes %v need privilege %q (authz.rego route_privilege; \"\" is none), so the scope rule in scope.rego %s",
					resource, held, admitted, want, routes, need, fix)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no scope rule checked")
	}
}

// jsonRoundTrip converts v (a Rego value) into out through JSON; it
// returns the JSON for error messages.
func jsonRoundTrip(v, out any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, json.Unmarshal(b, out)
}
