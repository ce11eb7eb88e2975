package storage_test

import (
	"bytes"
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/migrations"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// beforeQuery is a bun query hook for the tests: the function runs before
// each statement with its context and text (counting, gating, or
// committing a write between two statements of a request).
type beforeQuery func(ctx context.Context, query string)

func (h beforeQuery) BeforeQuery(ctx context.Context, ev *bun.QueryEvent) context.Context {
	h(ctx, ev.Query)
	return ctx
}

func (beforeQuery) AfterQuery(context.Context, *bun.QueryEvent) {}

// newStore returns a store over a fresh migrated database.
func newStore(t *testing.T) (*storage.Store, *storagetest.DB) {
	t.Helper()
	db := storagetest.New(t)
	return storage.NewStore(db.DB), db
}

// importJSON loads an import file into db and fails the test on error.
func importJSON(t *testing.T, db *storagetest.DB, data []byte) importfile.Result {
	t.Helper()
	res, err := importfile.Load(context.Background(), db.DB, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return res
}

// generateToday is the fixed reference day of the tests on generated data.
var generateToday = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// migrationReplay opens a new database and reverts the migration named
// version on it (its .down.sql), for a test that prepares data the
// migration must handle and then applies it again: it returns the
// database, a function that runs one statement there and the migration's
// .up.sql.
func migrationReplay(t *testing.T, version string) (db *storagetest.DB, exec func(q string, args ...any) error, up string) {
	t.Helper()
	file := func(name string) string {
		b, err := fs.ReadFile(migrations.Files(), name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	_, db = newStore(t)
	exec = func(q string, args ...any) error {
		_, err := db.ExecContext(context.Background(), q, args...)
		return err
	}
	if err := exec(file(version + ".down.sql")); err != nil {
		t.Fatal(err)
	}
	return db, exec, file(version + ".up.sql")
}
