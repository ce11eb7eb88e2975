package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestScopeGolden pins the SQL that the embedded policy's scope becomes,
// for an active principal of every account type (account 7, manager 3,
// every privilege) and every resource. Run with -update to rewrite.
func TestScopeGolden(t *testing.T) {
	ctx := context.Background()
	e, s := goldenWorld(t)
	for _, typ := range goldenTypes {
		for _, d := range Descriptors() {
			resource := string(d.resource)
			name := string(typ) + "_" + resource
			t.Run(name, func(t *testing.T) {
				p := goldenPrincipal(typ, "reports", "event_notifications")
				scope, err := e.Scope(ctx, policy.NewInput(p, "GET", "/"+resource, goldenDay), d.resource)
				if err != nil {
					t.Fatal(err)
				}
				q, err := s.scopedSelect(scope, d, modelOf(d))
				if err != nil {
					t.Fatal(err)
				}
				where, _ := json.Marshal(scope)
				got := "-- " + string(typ) + " (account 7, manager 3), " + resource + "\n-- scope: " + string(where) + "\n" +
					q.Column(d.id.Name).String() + "\n"
				compareGolden(t, filepath.Join("testdata", "golden", name+".sql"), got)
			})
		}
	}
}

// goldenDay is the day the golden statements are rendered on.
var goldenDay = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

// goldenTypes are the account types the golden files are written for.
var goldenTypes = []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount}

// goldenWorld is what the golden tests render with: the embedded policy
// and a Store whose handle never connects (String only renders a query).
func goldenWorld(t *testing.T) (*policy.Engine, *Store) {
	t.Helper()
	e, err := policy.New(context.Background(), policy.Options{Schema: Schema()})
	if err != nil {
		t.Fatal(err)
	}
	db := bun.NewDB(sql.OpenDB(pgdriver.NewConnector()), pgdialect.New())
	t.Cleanup(func() { db.Close() })
	return e, NewStore(db)
}

// goldenPrincipal is the golden files' active principal of type typ:
// account 7 under manager 3 (no manager for an admin), a token with every
// permission, and privileges.
func goldenPrincipal(typ tenancy.AccountType, privileges ...string) tenancy.Principal {
	p := tenancy.Principal{
		Token:   tenancy.Token{ID: 1, AccountID: 7, Permissions: []string{"*"}},
		Account: tenancy.Account{ID: 7, Type: typ, ManagerID: 3, Active: true, Privileges: privileges},
	}
	if typ == tenancy.Admin {
		p.Account.ManagerID = 0
	}
	return p
}

// compareGolden compares got with the golden file, or rewrites it with
// -update.
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestScopeGolden -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update if the change is intended):\n got: %s\nwant: %s", path, got, want)
	}
}
