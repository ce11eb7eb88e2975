package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/policy"
)

// countedTables are the tenant tables whose rows the triggers of migration
// 20261210000002_row_counters count per account in account_row_counts
// (TestCountedTotalsNeedEveryTrigger).
var countedTables = map[string]bool{"services": true, "reports": true, "events": true, "objects": true, "passengers": true}

// accountCounters is the counter table seen as a scoped table, so that the
// same translator renders a row scope against it. Its whitelist holds only
// the scope columns that are functions of a counter's account: account_id
// and the virtual manager_id. Any other column (granted_to, the
// subaccounts' device grants; imei; a data column) is not in it, and a
// scope naming one has no counter form: its lists count rows.
var accountCounters = &Descriptor{
	table: "account_row_counts", alias: "counter",
	scope: map[string]columnKind{"account_id": kindInt, "manager_id": kindManager},
}

// counterSQL is a compiled scope rendered against the counters: the sum
// of the counters it selects is the number of rows of the resource that
// the scope admits, because every condition it holds is a function of the
// counter's account, true for the account exactly when it is true for each
// of the account's rows.
type counterSQL struct {
	resource string
	where    sqlFragment
}

// compileCounters renders a scope of d against the counters. It returns
// nil, and lists count rows, for a table without counters and for a scope
// that names a column the counters do not have (fail closed: never the
// total of another scope).
func compileCounters(d *Descriptor, unrestricted, none bool, where *policy.Condition) *counterSQL {
	if d.scopedBy != "" || !countedTables[d.table] {
		return nil
	}
	sql, args, err := translateScope(accountCounters, unrestricted, none, where, true)
	if err != nil {
		return nil
	}
	return &counterSQL{resource: d.table, where: sqlFragment{sql: sql, args: args}}
}

// countedTotal returns the number of d's rows that scope admits, from the
// counters, and whether the scope has a counter form (otherwise the caller
// counts rows).
func (s *Store) countedTotal(ctx context.Context, scope policy.Scope, d *Descriptor) (int64, bool, error) {
	c, err := compiledFor(scope, d.scopeOwner())
	if err != nil || c.counter == nil || d.scopedBy != "" {
		return 0, false, nil
	}
	var total int64
	t := accountCounters
	args := append([]any{c.counter.resource}, c.counter.where.args...)
	err = s.db.NewSelect().
		TableExpr(`"`+t.table+`" AS "`+t.alias+`"`).
		ColumnExpr(`COALESCE(sum(`+t.col("n")+`), 0)`).
		Where(t.col("resource")+` = ? AND (`+c.counter.where.sql+`)`, args...).
		Scan(ctx, &total)
	if err != nil {
		return 0, false, Translate(err)
	}
	return total, true, nil
}
