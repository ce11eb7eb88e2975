package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/policy"
)

// countedTables are the tenant tables whose rows the triggers of migration
// 20261210000002_row_counters count, per account in account_row_counts
// and, for the tables with an imei column, per account and device key in
// device_row_counts (TestCountedTablesMatchTriggers).
var countedTables = map[string]bool{"services": true, "reports": true, "events": true, "objects": true, "passengers": true}

// The counter tables seen as scoped tables: the same translator renders a
// row scope against them. Their whitelist holds only the scope columns
// that are functions of a counter's key: account_id and the virtual
// manager_id (both of the key's account), and, per device key,
// granted_to. The device key is the row's imei as an array (ARRAY[imei]
// for a scalar imei), so granted_to is the array form for every resource:
// ARRAY[imei] <@ the granted devices holds exactly when imei is granted,
// which is what the scalar form asks. Any other column (imei itself, a
// data column) is not in the whitelist, and a scope naming it has no
// counter form: its lists count rows.
var (
	accountCounters = &Descriptor{
		table: "account_row_counts", alias: "counter",
		scope: map[string]columnKind{"account_id": kindInt, "manager_id": kindManager},
	}
	deviceCounters = &Descriptor{
		table: "device_row_counts", alias: "counter",
		scope: map[string]columnKind{"account_id": kindInt, "manager_id": kindManager, "granted_to": kindGrantedArray},
	}
)

// counterSQL is a compiled scope rendered against a counter table: the
// sum of the counters it selects is the number of rows of the resource
// that the scope admits, because every condition it holds is a function
// of the counter's key (account, or account and device key), evaluated
// the same for the key as for each of the key's rows.
type counterSQL struct {
	table    *Descriptor
	resource string
	where    sqlFragment
}

// compileCounters renders a scope of d against the counter tables: the
// per-account counters when it can (fewer rows to sum), the per-device
// ones when the scope names granted_to. It returns nil, and lists count
// rows, for a table without counters and for a scope that names a column
// the counters do not have (fail closed: never a total of another scope).
func compileCounters(d *Descriptor, unrestricted, none bool, where *policy.Condition) *counterSQL {
	if d.scopedBy != "" || !countedTables[d.table] {
		return nil
	}
	tables := []*Descriptor{accountCounters}
	if _, ok := d.scope["granted_to"]; ok {
		tables = append(tables, deviceCounters)
	}
	for _, t := range tables {
		sql, args, err := translateScope(t, unrestricted, none, where, true)
		if err == nil {
			return &counterSQL{table: t, resource: d.table, where: sqlFragment{sql: sql, args: args}}
		}
	}
	return nil
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
	t := c.counter.table
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
