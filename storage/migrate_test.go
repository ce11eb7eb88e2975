package storage_test

import (
	"context"
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
	tables := func() int {
		t.Helper()
		var n int
		if err := db.NewRaw("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'bun_%'").Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := tables(); got != 10 {
		t.Fatalf("after up: %d tables, want 10 (with audit_events)", got)
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
	if got := tables(); got != 0 {
		t.Fatalf("after down: %d tables, want 0", got)
	}
	if err := storage.Migrate(ctx, db.DB); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := tables(); got != 10 {
		t.Fatalf("after up again: %d tables, want 10 (with audit_events)", got)
	}
}
