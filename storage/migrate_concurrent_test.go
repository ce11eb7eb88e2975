package storage_test

import (
	"context"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestConcurrentStarts is what N replicas starting at once against an
// empty database (round 0) or one that does not exist yet do (fleetapi serve: EnsureDatabase,
// then Migrate): every one of them succeeds, whichever creates the
// database and whichever migrates it, and the schema is applied once.
// Issue 19 item 11: on 3a7d212 the losers failed with "migrations table is
// already locked" or on CREATE DATABASE.
func TestConcurrentStarts(t *testing.T) {
	const starts = 6
	ctx := context.Background()
	for round := range 3 {
		name, dsn := storagetest.UnusedDatabase(t, "fleetapi_test_starts_")
		migrateDSN := dsn
		if round == 0 { // the database exists: only the migrations race
			if err := storage.EnsureDatabase(ctx, dsn); err != nil {
				t.Fatal(err)
			}
			// In PgBouncer mode they race through the transaction pooler,
			// as replicas behind one do: the lock must hold there too.
			if b := storagetest.PgBouncerOf(t); b != nil {
				migrateDSN = b.URL(name)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, starts)
		start := make(chan struct{})
		for i := range starts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := storage.EnsureDatabase(ctx, dsn); err != nil {
					errs[i] = err
					return
				}
				db := storage.Open(migrateDSN, storage.Options{MaxOpenConns: 2})
				defer db.Close()
				errs[i] = storage.Migrate(ctx, db)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, start %d of %d: %v", round, i, starts, err)
			}
		}
		db := storage.Open(dsn, storage.Options{MaxOpenConns: 1})
		m, err := storage.Migrator(db)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := m.MigrationsWithStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if un := ms.Unapplied(); len(un) != 0 {
			t.Errorf("round %d: unapplied migrations after the starts: %v", round, un)
		}
		var groups int
		if err := db.NewRaw("SELECT count(DISTINCT group_id) FROM bun_migrations").Scan(ctx, &groups); err != nil {
			t.Fatal(err)
		}
		if groups != 1 {
			t.Errorf("round %d: migrations applied in %d groups, want 1 (one start migrates, the others find nothing to do)", round, groups)
		}
		db.Close()
	}
}
