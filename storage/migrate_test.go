package storage_test

import (
	"context"
	"slices"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

func TestMigrationsUpDownUp(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	m, err := storage.Migrator(db.DB)
	if err != nil {
		t.Fatal(err)
	}
	tables := func() []string {
		t.Helper()
		var names []string
		if err := db.NewRaw("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'bun_%' ORDER BY tablename").Scan(ctx, &names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	// Every table the code reads: each declared resource's, and the ones of
	// authentication, idempotency and the audit trail.
	up := tables()
	want := []string{"accounts", "audit_events", "idempotency_keys", "object_grants", "tokens"}
	for _, d := range storage.Descriptors() {
		want = append(want, d.Table())
	}
	for _, w := range want {
		if !slices.Contains(up, w) {
			t.Fatalf("after up: no table %s in %v", w, up)
		}
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Rollback(ctx); err != nil {
		t.Fatalf("down: %v", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tables(); len(got) != 0 {
		t.Fatalf("after down: tables %v, want none", got)
	}
	if err := storage.Migrate(ctx, db.DB); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := tables(); !slices.Equal(got, up) {
		t.Fatalf("after up again: tables %v, want %v", got, up)
	}
}
