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
// (account 7, manager 3).
func TestScopeTrees(t *testing.T) {
	e := engine(t)
	manager := RowScope{Where: &Condition{Op: OpOr, Children: []Condition{eq("account_id", 7), eq("manager_id", 7)}}}
	user := RowScope{Where: ptr(eq("account_id", 7))}
	granted := RowScope{Where: &Condition{Op: OpAnd, Children: []Condition{eq("account_id", 3), eq("granted_to", 7)}}}
	parent := RowScope{Where: ptr(eq("account_id", 3))}
	all := RowScope{Unrestricted: true}
	none := RowScope{None: true}
	cases := []struct {
		typ        string
		privileges []string
		want       map[string]RowScope
	}{
		{"admin", nil, map[string]RowScope{"services": all, "reports": all, "events": all, "passengers": all}},
		{"manager", nil, map[string]RowScope{"services": manager, "reports": manager, "events": manager, "passengers": manager}},
		{"user", nil, map[string]RowScope{"services": user, "reports": user, "events": user, "passengers": user}},
		{"subaccount", []string{"reports", "event_notifications"}, map[string]RowScope{"services": granted, "reports": granted, "events": granted, "passengers": parent}},
		{"subaccount", []string{}, map[string]RowScope{"services": granted, "reports": none, "events": none, "passengers": parent}},
	}
	for _, c := range cases {
		for _, r := range Resources() {
			t.Run(c.typ+"/"+strings.Join(c.privileges, "+")+"/"+r, func(t *testing.T) {
				got, err := e.Scope(context.Background(), principal(c.typ, c.privileges...), r)
				if err != nil {
					t.Fatal(err)
				}
				want := c.want[r]
				want.Resource = r
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
			for _, r := range Resources() {
				got, err := e.Scope(context.Background(), in, r)
				if err != nil || !got.None {
					t.Errorf("%s %+v %s: got %s, %v; want no rows", typ, in.Account, r, got, err)
				}
			}
		}
	}
	for _, r := range Resources() {
		if got, err := e.Scope(context.Background(), principal("reseller"), r); err != nil || !got.None {
			t.Errorf("unknown type, %s: %s, %v", r, got, err)
		}
	}
}

func TestScopeUnknownResource(t *testing.T) {
	e := engine(t)
	if _, err := e.Scope(context.Background(), principal("admin"), "accounts"); !errors.Is(err, ErrUnknownResource) {
		t.Errorf("Scope: %v", err)
	}
	if _, err := e.Admits(context.Background(), principal("admin"), "tokens", nil); !errors.Is(err, ErrUnknownResource) {
		t.Errorf("Admits: %v", err)
	}
}

// TestScopeValidate: a scope that ValidateScope rejects is an error (and
// New refuses to start when a sample principal's scope is rejected).
func TestScopeValidate(t *testing.T) {
	reject := func(rs RowScope) error {
		if rs.Where != nil && rs.Where.Op == OpOr {
			return errors.New("column manager_id not allowed")
		}
		return nil
	}
	_, err := New(context.Background(), Options{ValidateScope: reject})
	if err == nil || !strings.Contains(err.Error(), `scope rule "services" for a manager principal`) ||
		!strings.Contains(err.Error(), "manager_id not allowed") {
		t.Errorf("New: %v", err)
	}
	var seen []string
	e := newEngine(t, Options{ValidateScope: func(rs RowScope) error { seen = append(seen, rs.Resource); return nil }})
	if len(seen) != 16 {
		t.Errorf("ValidateScope saw %d scopes at start-up, want 4 types × 4 resources", len(seen))
	}
	if _, err := e.Scope(context.Background(), principal("user"), "events"); err != nil || len(seen) != 17 {
		t.Errorf("Scope: %v (validate calls %d)", err, len(seen))
	}
}

// TestAdmits evaluates the scope rules on known rows.
func TestAdmits(t *testing.T) {
	e := engine(t)
	row := func(account, manager, granted int64) map[string]any {
		return map[string]any{"account_id": account, "manager_id": manager, "granted_to": granted, "imei": "356938035643809"}
	}
	cases := []struct {
		name     string
		in       Input
		resource string
		row      map[string]any
		want     bool
	}{
		{"admin_any", principal("admin"), "events", row(99, 98, 0), true},
		{"manager_own", principal("manager"), "services", row(7, 1, 0), true},
		{"manager_managed", principal("manager"), "reports", row(12, 7, 0), true},
		{"manager_other", principal("manager"), "reports", row(12, 8, 0), false},
		{"user_own", principal("user"), "passengers", row(7, 3, 0), true},
		{"user_other", principal("user"), "passengers", row(8, 3, 0), false},
		{"sub_granted", principal("subaccount"), "services", row(3, 1, 7), true},
		{"sub_not_granted", principal("subaccount"), "services", row(3, 1, 8), false},
		{"sub_report_without_privilege", principal("subaccount"), "reports", row(3, 1, 7), false},
		{"sub_report_with_privilege", principal("subaccount", "reports"), "reports", row(3, 1, 7), true},
		{"sub_parent_passenger", principal("subaccount"), "passengers", row(3, 1, 0), true},
		{"sub_missing_columns", principal("subaccount"), "services", map[string]any{"account_id": 3}, false},
		{"inactive_user", func() Input { in := principal("user"); in.Account.Active = false; return in }(), "services", row(7, 3, 0), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := e.Admits(context.Background(), c.in, c.resource, c.row)
			if err != nil || got != c.want {
				t.Errorf("Admits = %t, %v; want %t", got, err, c.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
