package oracle_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tooling/oracle"
)

// engine is the embedded policy set with storage's resources.
func engine(t *testing.T) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// principal is an active, writable account of type typ (id 7, manager 3)
// whose token grants everything.
func principal(typ string, privileges ...string) policy.Input {
	if privileges == nil {
		privileges = []string{}
	}
	return policy.Input{
		Request: policy.RequestInput{Method: "GET", Route: "/services"},
		Token:   policy.TokenInput{ID: 11, Permissions: []string{"*"}},
		Account: policy.AccountInput{ID: 7, Type: typ, ManagerID: 3, Active: true, Privileges: privileges, ChainComplete: true},
	}
}

// TestUnknownResource: a resource the engine does not know has no oracle.
func TestUnknownResource(t *testing.T) {
	if _, err := oracle.New(context.Background(), engine(t), "tokens"); !errors.Is(err, policy.ErrUnknownResource) {
		t.Errorf("oracle.New: %v", err)
	}
}

// TestRowOracle evaluates the scope rules on known rows.
func TestRowOracle(t *testing.T) {
	e := engine(t)
	row := func(account, manager, granted int64) map[string]any {
		return map[string]any{"account_id": account, "manager_id": manager, "granted_to": granted, "imei": "356938035643809"}
	}
	cases := []struct {
		name     string
		in       policy.Input
		resource policy.Resource
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
		{"inactive_user", func() policy.Input { in := principal("user"); in.Account.Active = false; return in }(), "services", row(7, 3, 0), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := oracle.New(context.Background(), e, c.resource)
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.Admits(context.Background(), c.in, c.row)
			if err != nil || got != c.want {
				t.Errorf("Admits = %t, %v; want %t", got, err, c.want)
			}
		})
	}
}

// TestManagementRowOracle evaluates the management scope on known rows.
func TestManagementRowOracle(t *testing.T) {
	e := engine(t)
	o, err := oracle.New(context.Background(), e, policy.ManagementResource)
	if err != nil {
		t.Fatal(err)
	}
	row := func(id, manager int64, typ string, grand any) map[string]any {
		return map[string]any{"id": id, "manager_id": manager, "type": typ, "grand_manager_id": grand}
	}
	for _, c := range []struct {
		name string
		in   policy.Input
		row  map[string]any
		want bool
	}{
		{"manager_grand_subaccount", principal("manager"), row(20, 12, "subaccount", int64(7)), true},
		{"manager_grand_user", principal("manager"), row(20, 12, "user", int64(7)), false},
		{"user_subaccount", principal("user"), row(20, 7, "subaccount", nil), true},
		{"user_user", principal("user"), row(20, 7, "user", nil), false},
		{"subaccount_parent", principal("subaccount"), row(3, 1, "user", nil), false},
		{"admin_any", principal("admin"), row(99, 98, "manager", nil), true},
	} {
		got, err := o.Admits(context.Background(), c.in, c.row)
		if err != nil || got != c.want {
			t.Errorf("%s: %t, %v; want %t", c.name, got, err, c.want)
		}
	}
}
