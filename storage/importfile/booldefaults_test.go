package importfile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
)

// TestImportKeepsBooleanDefaults: a record that omits a boolean field
// whose column defaults to true (accounts.active, passengers.
// passenger_active, and any such column a migration adds) loads true, as
// the API's create does: a record type embedding the model reads an
// omitted field as Go's false, silently. The columns come from the
// catalog and the records from the demo data, every such field removed
// from every section's records (docs/architecture.md, "Import sections").
func TestImportKeepsBooleanDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	var cols []struct {
		Table   string `bun:"table_name"`
		Column  string `bun:"column_name"`
		Default string `bun:"column_default"`
	}
	if err := db.NewRaw(`SELECT table_name, column_name, column_default FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type = 'boolean' AND column_default IS NOT NULL AND column_default <> 'false'
		ORDER BY 1, 2`).Scan(ctx, &cols); err != nil {
		t.Fatal(err)
	}
	var file map[string][]map[string]any
	if err := json.Unmarshal(demodata.File(), &file); err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, s := range importfile.Sections() {
		sections[s.Name] = s.File == s.Name
	}
	removed := 0
	for _, c := range cols {
		if !sections[c.Table] {
			continue // no section of its own: nothing imports it
		}
		for _, rec := range file[c.Table] {
			if _, ok := rec[c.Column]; ok {
				delete(rec, c.Column)
				removed++
			}
		}
	}
	if removed == 0 {
		t.Fatal("the demo data sets none of the fields: nothing tested")
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	importJSON(t, db, b)
	// forced are the columns an import sets whatever the file says, with why.
	forced := map[string]string{
		"webhooks.active": "an imported webhook has no secret (an export never carries one): it is stored inactive until a rotate-secret gives it one (docs/decisions.md, webhooks' import)",
	}
	checked := 0
	for _, c := range cols {
		if !sections[c.Table] {
			continue
		}
		if why, ok := forced[c.Table+"."+c.Column]; ok {
			t.Logf("%s.%s: not a default: %s", c.Table, c.Column, why)
			continue
		}
		var all, other int
		if err := db.NewRaw(fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE %[2]q IS DISTINCT FROM (%[3]s)) FROM %[1]q`, c.Table, c.Column, c.Default)).
			Scan(ctx, &all, &other); err != nil {
			t.Fatal(err)
		}
		if all == 0 {
			t.Errorf("%s: the demo data holds no record: nothing tested", c.Table)
		}
		if other > 0 {
			t.Errorf("%[1]s.%[2]s: %[3]d of %[4]d records without %[2]s loaded other than its default %[5]s: the section's record type "+
				"(storage/importfile/%[1]s.go) must read it as a *bool and store the default when it is nil, "+
				"as importPassenger.PassengerActive does", c.Table, c.Column, other, all, c.Default)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no boolean column defaulting to true has a section: nothing tested")
	}
}
