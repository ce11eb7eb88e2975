package importfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
)

// fillFromDemo completes the test world of an export round trip where the
// synthetic data (synth.Generate) leaves a table of the subtree of root
// empty: a table holding account data (a column naming an account, read
// from the catalog) that is not in notExported and has none of the
// subtree's rows gets the demo data's records of its import section
// (storage/demodata/demodata.json, which every resource fills: docs/
// architecture.md, "Adding a list resource"), loaded for the subtree's
// user owning the most devices, its devices in place of theirs. So a new
// resource needs no hand-made row here: its section and its demo records
// are the world. A table that stays empty fails the round trip, saying
// what to add.
func fillFromDemo(t *testing.T, db *bun.DB, root string) {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	if err := db.NewRaw(`WITH RECURSIVE s AS (SELECT id FROM accounts WHERE username = ?
		UNION ALL SELECT a.id FROM accounts a JOIN s ON a.manager_id = s.id) SELECT id FROM s`, root).Scan(ctx, &ids); err != nil {
		t.Fatal(err)
	}
	var demo map[string][]map[string]any
	if err := json.Unmarshal(demodata.File(), &demo); err != nil {
		t.Fatal(err)
	}
	file := map[string][]map[string]any{}
	for table, cols := range catalog(t, db) {
		var conds []string
		for _, c := range cols {
			if c.kind() == "account" {
				conds = append(conds, fmt.Sprintf("%q = ANY(?0)", c.Name))
			}
		}
		if _, skip := notExported[table]; skip || table == "accounts" || len(conds) == 0 {
			continue
		}
		var n int
		if err := db.NewRaw(fmt.Sprintf("SELECT count(*) FROM %q WHERE %s", table, strings.Join(conds, " OR ")), pgdialect.Array(ids)).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if n > 0 || !slices.ContainsFunc(importfile.Sections(), func(s importfile.Section) bool { return s.Name == table && s.File == table }) {
			continue // filled, or without a section of its own: the round trip says what to add
		}
		file[table] = demo[table]
	}
	if len(file) == 0 {
		return
	}
	var owner string
	var devices []string
	if err := db.NewRaw(`SELECT a.username, array_agg(o.imei ORDER BY o.imei) FROM accounts a JOIN objects o ON o.account_id = a.id
		WHERE a.id = ANY(?) AND a.type = 'user' GROUP BY a.id, a.username ORDER BY count(*) DESC, a.id LIMIT 1`, pgdialect.Array(ids)).
		Scan(ctx, &owner, pgdialect.Array(&devices)); err != nil {
		t.Fatalf("no user of %s's subtree owns a device: %v", root, err)
	}
	for table, recs := range file {
		for i, rec := range recs {
			rec["account"] = owner
			switch imei := rec["imei"].(type) {
			case string:
				rec["imei"] = devices[i%len(devices)]
			case []any:
				for j := range imei {
					imei[j] = devices[(i+j)%len(devices)]
				}
			}
			renameReferences(t, db, owner, rec)
		}
		t.Logf("%s: the synthetic data holds none of the subtree's rows: %d records of the demo data added, owned by %s", table, len(recs), owner)
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importfile.Load(ctx, db, bytes.NewReader(b)); err != nil {
		t.Fatalf("the demo data's records of %v, loaded for %s: %v", slices.Sorted(maps.Keys(file)), owner, err)
	}
}

// renameReferences points a record's names of other records (a
// notification's event rule and service record) at records of owner,
// which the synthetic data made under other names: the first of owner's
// (for a service record, of the record's device), or none when owner has
// none.
func renameReferences(t *testing.T, db *bun.DB, owner string, rec map[string]any) {
	t.Helper()
	for field, query := range map[string]string{
		"event":   `SELECT e.name FROM events e JOIN accounts a ON a.id = e.account_id WHERE a.username = ? ORDER BY e.event_id LIMIT 1`,
		"service": `SELECT s.name FROM services s JOIN accounts a ON a.id = s.account_id WHERE a.username = ? AND s.imei = ? ORDER BY s.service_id LIMIT 1`,
	} {
		if _, ok := rec[field]; !ok {
			continue
		}
		var names []string
		if err := db.NewRaw(query, owner, rec["imei"]).Scan(context.Background(), &names); err != nil {
			t.Fatal(err)
		}
		if len(names) == 0 {
			delete(rec, field)
		} else {
			rec[field] = names[0]
		}
	}
}
