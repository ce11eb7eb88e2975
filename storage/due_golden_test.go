package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestDueGolden pins the statement of GET /services/due (dueQuery) for an
// active principal of every account type (account 7, manager 3): the ids
// of the page from the due indexes (due_from <= today, the scope in its
// counting shape), then the page's rows with their object. Run with
// -update to rewrite.
func TestDueGolden(t *testing.T) {
	ctx := context.Background()
	e, err := policy.New(ctx, policy.Options{Schema: Schema()})
	if err != nil {
		t.Fatal(err)
	}
	// The handle never connects: String only renders the query.
	sqldb := sql.OpenDB(pgdriver.NewConnector())
	db := bun.NewDB(sqldb, pgdialect.New())
	t.Cleanup(func() { db.Close() })
	s := NewStore(db)
	today := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	for _, typ := range []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount} {
		name := string(typ) + "_due"
		t.Run(name, func(t *testing.T) {
			p := tenancy.Principal{
				Token: tenancy.Token{ID: 1, AccountID: 7, Permissions: []string{"*"}},
				Account: tenancy.Account{ID: 7, Type: typ, ManagerID: 3, Active: true,
					Privileges: []string{"reports", "event_notifications"}},
			}
			if typ == tenancy.Admin {
				p.Account.ManagerID = 0
			}
			scope, err := e.Scope(ctx, policy.NewInput(p, "GET", "/services/due", today), Services.Resource())
			if err != nil {
				t.Fatal(err)
			}
			var items []DueService
			q, err := s.dueQuery(scope, today, 500, &items)
			if err != nil {
				t.Fatal(err)
			}
			got := "-- " + string(typ) + " (account 7, manager 3), GET /services/due on 2026-01-15\n" + q.String() + "\n"
			compareGolden(t, filepath.Join("testdata", "golden", name+".sql"), got)
		})
	}
}
