package storage_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// listIndexesExempt are the listed tables that lack an index the rule of
// TestListedTablesHaveTheirIndexes asks for, with why.
var listIndexesExempt = map[string]string{
	"objects": "the devices predate the rule: their lists read objects_account_id_idx (account_id) and the unique imei keys, " +
		"at most a quota of devices per account; their search is not measured in docs/performance.md",
}

// TestListedTablesHaveTheirIndexes: the migration of a listed resource
// gives its table the indexes its list paths read (migrations
// 20261122000002 and 20261122000001), read from the catalog for every
// listed descriptor: the default path WHERE account_id = ? ORDER BY <id>
// (a btree index on (account_id, <id>)), the free-text search (a trigram
// GIN index on each search field: ILIKE '%x%' reads every row without
// one), and the subaccounts' scope over a list of devices (a GIN index on
// imei, for imei && ARRAY[...]). Forgetting one fails nothing else: the
// list answers the same, only slower with every row; so this test fails,
// giving the statement to add.
func TestListedTablesHaveTheirIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	var rows []struct {
		Table string `bun:"tablename"`
		Def   string `bun:"indexdef"`
	}
	if err := db.NewRaw(`SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'public'`).Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	var arrays []string // table.column of the text[] columns
	if err := db.NewRaw(`SELECT table_name || '.' || column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type = 'ARRAY'`).Scan(ctx, &arrays); err != nil {
		t.Fatal(err)
	}
	has := func(table, pattern string) bool {
		re := regexp.MustCompile(pattern)
		return slices.ContainsFunc(rows, func(r struct {
			Table string `bun:"tablename"`
			Def   string `bun:"indexdef"`
		}) bool {
			return r.Table == table && re.MatchString(r.Def)
		})
	}
	checked := 0
	for _, d := range storage.Descriptors() {
		table, id := d.Table(), d.ID().Name
		if !d.Listed() {
			continue
		}
		if why, ok := listIndexesExempt[table]; ok {
			t.Logf("%s: exempt: %s", table, why)
			continue
		}
		checked++
		var missing []string
		if !has(table, fmt.Sprintf(`USING btree \(account_id, %s[,)]`, regexp.QuoteMeta(id))) {
			missing = append(missing, fmt.Sprintf("CREATE INDEX %[1]s_account_id_idx ON %[1]s (account_id, %[2]s); -- the default list path: WHERE account_id = ? ORDER BY %[2]s", table, id))
		}
		for _, f := range d.SearchFields() {
			if !has(table, fmt.Sprintf(`USING gin \(%s gin_trgm_ops\)`, regexp.QuoteMeta(f))) {
				missing = append(missing, fmt.Sprintf("CREATE INDEX %[1]s_%[2]s_trgm_idx ON %[1]s USING gin (%[2]s gin_trgm_ops); -- the search field %[2]s", table, f))
			}
		}
		if slices.Contains(arrays, table+".imei") && !has(table, `USING gin \(imei\)`) {
			missing = append(missing, fmt.Sprintf("CREATE INDEX %[1]s_imei_idx ON %[1]s USING gin (imei); -- a subaccount's scope: the rows naming its granted devices", table))
		}
		for _, m := range missing {
			t.Errorf("%s: its list reads every row without an index: add to its migration\n\t%s", table, m)
		}
	}
	if checked == 0 {
		t.Fatal("no listed descriptor checked")
	}
}
