package storage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/storage/synth"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestScopeCountShape checks, on the small generated data set, that the
// counting shape of every role's scope admits exactly the rows of its page
// shape, for every resource, and that a manager's count is one semi-join
// over accounts (no OR that would force a sequential scan).
func TestScopeCountShape(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storagetest.New(t)
	cfg, err := synth.Preset("small")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Today = generateToday
	if _, err := synth.Generate(ctx, db.DB, cfg); err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(db.DB)
	engine := newEngine(t)
	var usernames []string
	if err := db.NewRaw(`SELECT username FROM accounts WHERE id IN (1, 2, 3, 6) OR id % 37 = 0 ORDER BY id`).Scan(ctx, &usernames); err != nil {
		t.Fatal(err)
	}
	for _, name := range usernames {
		a, err := store.AccountByUsername(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		p := tenancy.Principal{Token: tenancy.Token{ID: 1, Permissions: []string{"*"}}, Account: a}
		for _, resource := range storage.Resources() {
			t.Run(fmt.Sprintf("%s_%s_%s", a.Type, name, resource), func(t *testing.T) {
				scope, err := engine.Scope(ctx, policy.NewInput(p, "GET", "/"+string(resource), generateToday), resource)
				if err != nil {
					t.Fatal(err)
				}
				page, count, sql, err := store.ScopeCounts(ctx, scope)
				if err != nil {
					t.Fatal(err)
				}
				if page != count {
					t.Fatalf("page shape admits %d rows, count shape %d: %s", page, count, sql)
				}
				if a.Type == tenancy.Manager && a.Active && (strings.Contains(sql, " OR EXISTS") || !strings.Contains(sql, `IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."id" = `)) {
					t.Errorf("manager count is not one semi-join: %s", sql)
				}
			})
		}
	}
}
