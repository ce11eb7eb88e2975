package storage_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

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
