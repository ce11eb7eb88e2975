package policy

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func eq(field string, v int64) Condition { return Condition{Op: OpEq, Field: field, Value: v} }

// TestScopeTrees pins the condition tree of every account type × resource
// (account 7, manager 3) of the table; a resource of the policy that the
// table does not name must have one of the trees the table gives the same
// principal.
func TestScopeTrees(t *testing.T) {
	e := engine(t)
	manager := Scope{where: &Condition{Op: OpOr, Children: []Condition{eq("account_id", 7), eq("manager_id", 7)}}}
	user := Scope{where: ptr(eq("account_id", 7))}
	granted := Scope{where: &Condition{Op: OpAnd, Children: []Condition{eq("account_id", 3), eq("granted_to", 7)}}}
	parent := Scope{where: ptr(eq("account_id", 3))}
	all := Scope{unrestricted: true}
	none := Scope{none: true}
	cases := []struct {
		typ        string
		privileges []string
		want       map[Resource]Scope
	}{
		{"admin", nil, map[Resource]Scope{"services": all, "reports": all, "events": all, "passengers": all, "zones": all}},
		{"manager", nil, map[Resource]Scope{"services": manager, "reports": manager, "events": manager, "passengers": manager, "zones": manager}},
		// webhooks: a user sees its own and its subaccounts' (their manager_id
		// is the user), a subaccount only its own (docs/decisions.md, issue 37)
		// zones: seen like the account's rows; a subaccount with
		// event_notifications sees its parent's (docs/design.md §15), none
		// without it
		{"user", nil, map[Resource]Scope{"services": user, "reports": user, "events": user, "passengers": user, "webhooks": manager, "zones": user}},
		{"subaccount", []string{"reports", "event_notifications"}, map[Resource]Scope{"services": granted, "reports": granted, "events": granted, "passengers": parent, "webhooks": user,
			"zones": parent}},
		{"subaccount", []string{}, map[Resource]Scope{"services": granted, "reports": none, "events": none, "passengers": parent, "zones": none}},
	}
	for _, c := range cases {
		for _, r := range testResources {
			t.Run(c.typ+"/"+strings.Join(c.privileges, "+")+"/"+string(r), func(t *testing.T) {
				got, err := e.Scope(context.Background(), principal(c.typ, c.privileges...), r)
				if err != nil {
					t.Fatal(err)
				}
				got.key = "" // the cache's (TestScopeCompile)
				want, pinned := c.want[r]
				if !pinned {
					// a resource the table does not pin has one of the
					// trees the table gives this principal
					for _, w := range c.want {
						if w.resource = r; reflect.DeepEqual(got, w) {
							return
						}
					}
					t.Fatalf("got %s %+v, none of the trees of %v", got, got, c.want)
				}
				want.resource = r
				if !reflect.DeepEqual(got, want) {
					t.Errorf("got %s %+v\nwant %s", got, got, want)
				}
			})
		}
	}
}

// TestScopeNoRows: inactive, expired and unknown principals see nothing.
func TestScopeNoRows(t *testing.T) {
	e := engine(t)
	for _, typ := range append(accountTypes(), "reseller", "") {
		for _, mut := range []func(*Input){
			func(in *Input) { in.Account.Active = false },
			func(in *Input) { in.Account.Expired = true },
		} {
			in := principal(typ, "reports", "event_notifications")
			mut(&in)
			for _, r := range testResources {
				got, err := e.Scope(context.Background(), in, r)
				if err != nil || !got.None() {
					t.Errorf("%s %+v %s: got %s, %v; want no rows", typ, in.Account, r, got, err)
				}
			}
		}
	}
	for _, r := range testResources {
		if got, err := e.Scope(context.Background(), principal("reseller"), r); err != nil || !got.None() {
			t.Errorf("unknown type, %s: %s, %v", r, got, err)
		}
	}
}

func TestScopeUnknownResource(t *testing.T) {
	e := engine(t)
	if _, err := e.Scope(context.Background(), principal("admin"), "accounts"); !errors.Is(err, ErrUnknownResource) {
		t.Errorf("Scope: %v", err)
	}
}

// TestScopeCompile: a scope that the schema rejects (Schema.CheckScope)
// stops New when a sample principal's scope is rejected; the schema is
// asked at start-up only, never on a request (no callback on the request
// path), and a scope is compiled once per cache miss: another token and
// route of the same account get the same answer, of the same Key.
func TestScopeCompile(t *testing.T) {
	reject := func(s Scope) error {
		if w, ok := s.Where(); ok && w.Op == OpOr {
			return errors.New("column manager_id not allowed")
		}
		return nil
	}
	_, err := New(context.Background(), Options{Schema: checkingSchema{ResourceList(testResources), reject}})
	if err == nil || !strings.Contains(err.Error(), `scope rule "services" for a manager principal`) ||
		!strings.Contains(err.Error(), "manager_id not allowed") {
		t.Errorf("New: %v", err)
	}
	var seen []Resource
	e := newEngine(t, Options{Schema: checkingSchema{ResourceList(testResources), func(s Scope) error { seen = append(seen, s.Resource()); return nil }}})
	startup := len(accountTypes()) * (len(testResources) + 1)
	if len(seen) != startup {
		t.Errorf("the schema saw %d scopes at start-up, want %d types × (%d resources + the management scope)", len(seen), len(accountTypes()), len(testResources))
	}
	got, err := e.Scope(context.Background(), principal("user"), "events")
	if err != nil || len(seen) != startup || got.String() != "account_id = 7" || got.Key() == "" {
		t.Errorf("Scope: %v, %v, key %q (schema asked %d times on a request)", got, err, got.Key(), len(seen)-startup)
	}
	other := principal("user").at("GET", "/reports")
	other.Token = TokenInput{ID: 99, Permissions: []string{"GET /events"}}
	if again, err := e.Scope(context.Background(), other, "events"); err != nil || len(seen) != startup || again.Key() != got.Key() || again.where != got.where {
		t.Errorf("another token and route of the same account compiled again: %v (key %q, %q)", err, again.Key(), got.Key())
	}
	if mine, err := e.Scope(context.Background(), principal("manager"), "events"); err != nil || mine.Key() == got.Key() {
		t.Errorf("another account shares the key %q: %v", mine.Key(), err)
	}
}

// checkingSchema is a Schema of the test resources with a check of the
// test's own.
type checkingSchema struct {
	ResourceList
	check func(Scope) error
}

func (s checkingSchema) CheckScope(scope Scope) error { return s.check(scope) }

func ptr[T any](v T) *T { return &v }
