package importfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
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

// rowCounts counts the rows of every table of the schema (the migrations'
// own aside), so that a table an import may write cannot be left out.
func rowCounts(t *testing.T, db *storagetest.DB) map[string]int {
	t.Helper()
	var tables []string
	if err := db.NewRaw("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'bun_%' ORDER BY 1").
		Scan(context.Background(), &tables); err != nil {
		t.Fatalf("list tables: %v", err)
	}
	if len(tables) == 0 {
		t.Fatal("no tables")
	}
	out := map[string]int{}
	for _, table := range tables {
		var n int
		if err := db.NewRaw("SELECT count(*) FROM ?", bun.Ident(table)).Scan(context.Background(), &n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		out[table] = n
	}
	return out
}

// demoDoc returns the demo data as a generic document to modify.
func demoDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(demodata.File(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// record returns doc[section][i] as an object to modify.
func record(t *testing.T, doc map[string]any, section string, i int) map[string]any {
	t.Helper()
	recs, ok := doc[section].([]any)
	if !ok || i >= len(recs) {
		t.Fatalf("demo data has no %s[%d]", section, i)
	}
	return recs[i].(map[string]any)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sectionSizes counts what a file holds for each section of
// importfile.Sections: the records under its key, and for grants, which
// read the accounts' records, the devices those grant.
func sectionSizes(t *testing.T, doc map[string]any) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, s := range importfile.Sections() {
		recs, _ := doc[s.File].([]any)
		switch {
		case s.File == s.Name:
			out[s.Name] = len(recs)
		case s.Name == "grants":
			for _, r := range recs {
				objects, _ := r.(map[string]any)["objects"].([]any)
				out[s.Name] += len(objects)
			}
		default:
			t.Fatalf("section %s reads the records of %s: say here what it counts", s.Name, s.File)
		}
	}
	return out
}
