package storage

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
)

// TestManagementScopeGolden pins the SQL that the embedded policy's
// management scope becomes for an active principal of every account type
// (account 7, manager 3). Run with -update to rewrite.
func TestManagementScopeGolden(t *testing.T) {
	ctx := context.Background()
	e, s := goldenWorld(t)
	for _, typ := range goldenTypes {
		t.Run(string(typ), func(t *testing.T) {
			scope, err := e.ManagementScope(ctx, policy.NewInput(goldenPrincipal(typ), "GET", "/accounts", goldenDay))
			if err != nil {
				t.Fatal(err)
			}
			q, err := s.scopedSelect(scope, accountsScope, (*Account)(nil))
			if err != nil {
				t.Fatal(err)
			}
			where, _ := json.Marshal(scope)
			got := "-- " + string(typ) + " (account 7, manager 3), management scope of accounts\n-- scope: " + string(where) + "\n" +
				q.Column("id").String() + "\n"
			compareGolden(t, filepath.Join("testdata", "golden", "manage_"+string(typ)+"_accounts.sql"), got)
		})
	}
}

// TestAccountsScopeWhitelist: the accounts descriptor admits exactly the
// management scope's columns, and a scope of the accounts is not usable on
// a tenant table (nor theirs on accounts).
func TestAccountsScopeWhitelist(t *testing.T) {
	if len(accountsScope.scope) != 4 || accountsScope.table != "accounts" || accountsScope.resource != policy.ManagementResource {
		t.Errorf("accounts descriptor %+v", accountsScope)
	}
	if descriptorOf(policy.ManagementResource) != nil {
		t.Error("accounts is declared as a tenant resource")
	}
	for _, c := range []policy.Condition{
		{Op: policy.OpEq, Field: "account_id", Value: int64(7)},
		{Op: policy.OpEq, Field: "granted_to", Value: int64(7)},
		{Op: policy.OpIn, Field: "grand_manager_id", Value: []any{int64(7)}},
		{Op: policy.OpEq, Field: "type", Value: int64(7)},
	} {
		if _, _, _, err := translateScope(accountsScope, false, false, &c, false); err == nil {
			t.Errorf("%+v translated on accounts", c)
		}
	}
	for _, d := range Descriptors() {
		c := policy.Condition{Op: policy.OpEq, Field: "grand_manager_id", Value: int64(7)}
		if _, _, _, err := translateScope(d, false, false, &c, false); err == nil {
			t.Errorf("grand_manager_id translated on %s", d.table)
		}
	}
}
