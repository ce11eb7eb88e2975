package storage

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
)

// TestDueGolden pins the statement of GET /services/due (dueQuery) for an
// active principal of every account type (account 7, manager 3): the ids
// of the page from the due indexes (due_from <= today, the scope in its
// counting shape), then the page's rows with their object. Run with
// -update to rewrite.
func TestDueGolden(t *testing.T) {
	ctx := context.Background()
	e, s := goldenWorld(t)
	for _, typ := range goldenTypes {
		name := string(typ) + "_due"
		t.Run(name, func(t *testing.T) {
			p := goldenPrincipal(typ, "reports", "event_notifications")
			scope, err := e.Scope(ctx, policy.NewInput(p, "GET", "/services/due", goldenDay), Services.Resource())
			if err != nil {
				t.Fatal(err)
			}
			var items []DueService
			q, err := s.dueQuery(scope, goldenDay, 500, &items)
			if err != nil {
				t.Fatal(err)
			}
			got := "-- " + string(typ) + " (account 7, manager 3), GET /services/due on 2026-01-15\n" + q.String() + "\n"
			compareGolden(t, filepath.Join("testdata", "golden", name+".sql"), got)
		})
	}
}
