package storage

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/internal/paging"
)

// The row counters (docs/architecture.md, "Counters"): a resource declared
// with the option counted (declare) has its rows counted per account in
// account_row_counts by statement-level triggers running count_rows(),
// which its migration installs with SELECT count_table('<table>')
// (migrations 20261210000002_row_counters and 20261226000001_count_table).
// TestCountedTablesAreTheDeclared checks that the tables carrying those
// triggers are exactly the counted descriptors'.

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
	if d.scopedBy != "" || !d.counted {
		return nil
	}
	sql, args, _, err := translateScope(accountCounters, unrestricted, none, where, true)
	if err != nil {
		return nil
	}
	return &counterSQL{resource: d.table, where: sqlFragment{sql: sql, args: args}}
}

// countedTotal returns the number of d's rows that scope admits, from the
// counters, and whether the scope has a counter form (otherwise the caller
// counts rows).
func (s *Store) countedTotal(ctx context.Context, scope policy.Scope, d *Descriptor) (int64, bool, error) {
	c, err := s.compiledFor(scope, d.scopeOwner())
	if err != nil {
		return 0, false, nil
	}
	return s.counterTotal(ctx, c, d)
}

// counterTotal is countedTotal for the compiled scope c of d's scope
// owner (compiledFor).
func (s *Store) counterTotal(ctx context.Context, c *compiledScope, d *Descriptor) (int64, bool, error) {
	if c.counter == nil || d.scopedBy != "" {
		return 0, false, nil
	}
	var total int64
	if err := s.counterQuery(c).Scan(ctx, &total); err != nil {
		return 0, false, Translate(err)
	}
	return total, true, nil
}

// spreadRows is what the paging facts read of a scope whose pages walk the
// table's key, in one statement (Store.spreadRows).
type spreadRows struct {
	// rows is the number of rows the scope admits (the list's total
	// without filters and search).
	rows int64
	// table is the table's estimated number of rows (pg_class.reltuples:
	// -1 before the first ANALYZE).
	table int64
	// version is the version of the scope's rows (paging/kept.go).
	version paging.Version
}

// spreadRows returns, in one statement, the total of the rows of d that
// the compiled scope c admits (from the counters, as counterTotal), the
// table's estimated size and the version of those rows (read from the
// same counter rows, as versionQuery does), for the paging facts (pageFacts). c must have a
// counter form.
func (s *Store) spreadRows(ctx context.Context, c *compiledScope, d *Descriptor) (spreadRows, error) {
	var sp spreadRows
	if c.counter == nil {
		return sp, fmt.Errorf("%w: scope of %s has no counter form", ErrBadListRequest, d.resource)
	}
	err := withVersion(s.counterQuery(c).
		ColumnExpr(`(SELECT "rel"."reltuples" FROM "pg_class" AS "rel" WHERE "rel"."oid" = ?::regclass)::bigint`, d.table)).
		Scan(ctx, &sp.rows, &sp.table, &sp.version.Started, &sp.version.Generation, &sp.version.Changes)
	if err != nil {
		return spreadRows{}, Translate(err)
	}
	return sp, nil
}

// tableEstimateTTL is how long the Stores made from one reuse a table's
// estimated number of rows (tableRows): the estimate changes only when the
// table is analyzed, and it only chooses between two shapes of the same
// page.
const tableEstimateTTL = time.Minute

// tableEstimates keeps each table's estimated number of rows and when it
// was read (at), shared like the kept totals.
type tableEstimates struct {
	mu   sync.Mutex
	rows map[string]tableEstimate
}

type tableEstimate struct {
	rows int64
	at   time.Time
}

func newTableEstimates() *tableEstimates {
	return &tableEstimates{rows: make(map[string]tableEstimate)}
}

// tableRows returns the number of rows of d's table as PostgreSQL's
// statistics estimate it (pg_class.reltuples: -1 before the first
// ANALYZE), for paging.DeferPage: read at most once per tableEstimateTTL.
func (s *Store) tableRows(ctx context.Context, d *Descriptor) (int64, error) {
	e := s.estimates
	e.mu.Lock()
	kept, ok := e.rows[d.table]
	e.mu.Unlock()
	if ok && time.Since(kept.at) < tableEstimateTTL {
		return kept.rows, nil
	}
	var n int64
	err := s.db.NewSelect().TableExpr(`"pg_class" AS "rel"`).
		ColumnExpr(`"rel"."reltuples"::bigint`).
		Where(`"rel"."oid" = ?::regclass`, d.table).
		Scan(ctx, &n)
	if err != nil {
		return 0, Translate(err)
	}
	e.mu.Lock()
	e.rows[d.table] = tableEstimate{rows: n, at: time.Now()}
	e.mu.Unlock()
	return n, nil
}

// counterQuery selects the sum of the counter rows of c's counter form:
// the number of rows c admits.
func (s *Store) counterQuery(c *compiledScope) *bun.SelectQuery {
	return s.counterRows(c.counter).ColumnExpr(`COALESCE(sum(` + accountCounters.col("n") + `), 0)`)
}

// counterRows selects, without columns, the counter rows of c's resource
// that the counter form c admits.
func (s *Store) counterRows(c *counterSQL) *bun.SelectQuery {
	t := accountCounters
	args := append([]any{c.resource}, c.where.args...)
	return s.db.NewSelect().
		TableExpr(`"`+t.table+`" AS "`+t.alias+`"`).
		Where(t.col("resource")+` = ? AND (`+c.where.sql+`)`, args...)
}

// SuspendRowCounting disables the counting INSERT triggers of the counted
// tables inside tx, for a bulk load (synth.Generate) that holds those
// tables exclusively until it commits; ResumeRowCounting must follow in
// the same transaction. Counting the loaded rows once at the end is one
// grouped scan per table, where the triggers would upsert every account
// of every COPY chunk. Only the counting triggers are touched: other
// triggers and the foreign keys stay in force. ALTER TABLE is
// transactional, so a load that fails leaves the triggers as they were.
func SuspendRowCounting(ctx context.Context, tx bun.Tx) error {
	for _, t := range countedTables() {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+t+` DISABLE TRIGGER `+t+`_count_insert`); err != nil {
			return Translate(err)
		}
	}
	return nil
}

// ResumeRowCounting enables the triggers SuspendRowCounting disabled and
// recounts every counted table's rows per account, in stripe 0 (as the
// migration's backfill does).
func ResumeRowCounting(ctx context.Context, tx bun.Tx) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM account_row_counts`); err != nil {
		return Translate(err)
	}
	for _, t := range countedTables() {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+t+` ENABLE TRIGGER `+t+`_count_insert`); err != nil {
			return Translate(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO account_row_counts (resource, account_id, slot, n)
			SELECT ?, account_id, 0, count(*) FROM `+t+` GROUP BY account_id`, t); err != nil {
			return Translate(err)
		}
	}
	return nil
}

// DefaultCounterFoldInterval is how often serve folds the counters'
// stripes (FoldCounters) unless FLEET_COUNTER_FOLD_INTERVAL says otherwise.
const DefaultCounterFoldInterval = 10 * time.Minute

// counterFoldBatch is the most stripe rows one fold statement moves.
const counterFoldBatch = 5000

// FoldCounters moves the counters' stripes into one row per account and
// resource (fold_row_counts, migration 20270111000001): batches of up to
// 5,000 rows, each its own statement, until a batch moves fewer or ctx
// ends. Totals and versions keep their values (the generation is bumped,
// so kept totals are counted again once); reads of the counters sum fewer
// rows. Rows a writer holds are skipped and folded by a later call. It
// returns the number of stripe rows folded.
func (s *Store) FoldCounters(ctx context.Context) (int64, error) {
	var total int64
	for {
		var n int64
		if err := s.db.NewRaw(`SELECT fold_row_counts(?)`, counterFoldBatch).Scan(ctx, &n); err != nil {
			return total, Translate(err)
		}
		total += n
		if n < counterFoldBatch {
			return total, nil
		}
	}
}

// countedTables returns the tables of the counted resources, sorted.
func countedTables() []string {
	var out []string
	for _, d := range registry {
		if d.counted {
			out = append(out, d.table)
		}
	}
	slices.Sort(out)
	return out
}
