package demodata_test

import (
	"bytes"
	"context"
	"testing"

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
func importJSON(t *testing.T, db *storagetest.DB, data []byte) {
	t.Helper()
	if _, err := importfile.Load(context.Background(), db.DB, bytes.NewReader(data)); err != nil {
		t.Fatalf("import: %v", err)
	}
}
