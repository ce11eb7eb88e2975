package synth_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// newEngine returns the real embedded policy with storage's scope check.
func newEngine(t testing.TB) *policy.Engine {
	t.Helper()
	e, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	return e
}

// rowCounts counts the rows of every table Generate fills.
func rowCounts(t *testing.T, db *storagetest.DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"accounts", "objects", "object_grants", "services", "reports", "events", "passengers", "tokens"} {
		var n int
		if err := db.NewRaw("SELECT count(*) FROM ?", bun.Ident(table)).Scan(context.Background(), &n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}
