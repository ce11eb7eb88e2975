package paging

import (
	"context"
	"crypto/sha256"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Kept totals (docs/decisions.md, "Search totals"; migration
// 20270110000001_count_versions): the total of a filtered or searched list
// does not depend on the page, so it is counted once and reused for the
// other pages while no row the count could see has changed. Whether one
// has is read from the row counters: the version of a scope is
//
//	(pg_postmaster_start_time(), count_generation.generation,
//	 sum(account_row_counts.changes) over the scope's counter rows)
//
// read with the scope's counter form (storage's compileCounters), as cheap as an
// unfiltered list's total. Every committed statement that inserts or
// deletes rows of the resource in an account of the scope, or changes a
// filtered or searched column or the account of one of them, adds at least
// 1 to the changes of a counter row of the scope; the counter rows of a
// scope and the accounts it resolves change only with a bump of the
// generation. On one server, the snapshots of successive statements see
// ever larger sets of committed transactions, so two snapshots that read
// the same version see the same rows of the scope: the same total for the
// same filters and search. The server's start time keeps apart what two
// servers (a primary and its replicas, a promoted standby, a server
// restarted after losing its last commits) may order differently.
//
// Concurrent requests that miss the same total at the same version share
// one count (Cache.Count): a term seen for the first time by many
// clients at once, or just after a write, is counted once, not once per
// request.
//
// A total is kept only from a statement on the Store's pool (a *bun.DB),
// never from inside a transaction, whose own uncommitted writes would show
// in both the count and the version and may roll back. Scopes without a
// counter form (device grants) count rows, as before.
//
// The totals are kept under a hash of their statements, within a budget
// of bytes shared fairly between tenants (cache.go).

// SameVersion returns a statement that selects one row while the version
// the statement version selects (started, generation, changes) is v, and none once it has
// moved: a page read by key from ids kept at v requires it (EXISTS), so
// that the page is of the snapshot of its ids and total.
func SameVersion(db bun.IDB, version *bun.SelectQuery, v Version) *bun.SelectQuery {
	return db.NewSelect().TableExpr(`(?) AS "v"`, version).
		ColumnExpr("1").
		Where(`"v"."started" = ? AND "v"."generation" = ? AND "v"."changes" = ?`, v.Started, v.Generation, v.Changes)
}

// Key returns where count's kept total is kept: the SHA-256 of the server
// (empty for the primary, "replica N"), the scope's version statement
// (version) and the count statement, rendered with their values; and the
// tenant it is kept for, the SHA-256 of the version statement alone (the
// scope's counter rows: whose rows it counts). Rendered into a reused
// buffer and hashed, so that neither statement is kept: a scope's
// statements run to tens of KiB, and a filter value of one request would
// otherwise hold them for as long as its total is kept.
func (c *Cache) Key(version, count *bun.SelectQuery, server string) (Key, error) {
	buf := c.buffer()
	defer c.release(buf)
	var err error
	b := (*buf)[:0]
	if b, err = version.AppendQuery(version.DB().QueryGen(), b); err != nil {
		return Key{}, err
	}
	k := Key{Tenant: sha256.Sum256(b)}
	b = append(b, 0)
	b = append(b, server...)
	b = append(b, 0)
	q := count.Clone().ColumnExpr("count(*)")
	if b, err = q.AppendQuery(q.DB().QueryGen(), b); err != nil {
		return Key{}, err
	}
	k.ID = sha256.Sum256(b)
	*buf = b
	return k, nil
}

// Keep returns the number of rows count (a SELECT of a scope's rows,
// filters and search applied, without columns) selects at the version
// now, which the caller has just read with the statement version: kept,
// or counted with the version in the same statement on db (one snapshot),
// once for the requests that miss it together (Cache.Count), and kept
// under the key of server (Cache.Key). With withIDs the statement that
// counts also returns the ids (the column idCol of count, named idName)
// of the rows in ascending order when there are at most MaxIDs (array_agg
// under a CASE on the count), and they are kept and returned with the
// total, so that the list's pages in id order are read by key; a total
// kept without its ids does not answer such a request (Kept.answers). Its
// errors are the driver's: the caller translates them.
func (c *Cache) Keep(ctx context.Context, db bun.IDB, version, count *bun.SelectQuery, server, idCol, idName string, withIDs bool, now Version) (Kept, error) {
	key, err := c.Key(version, count, server)
	if err != nil {
		return Kept{}, err
	}
	if withIDs {
		if prev, ok := c.Get(key.ID); ok && prev.Total > c.MaxIDs {
			// Its last count was over the bound: count it without the
			// ids (array_agg collects and sorts every match before the
			// CASE drops them: 200,000 matches among 1,000,000 rows
			// counted in 259-324 ms alone, 545-569 ms with them). A
			// total that fell within the bound does not answer for the
			// ids (Kept.answers): the next request counts it with
			// them.
			withIDs = false
		}
	}
	return c.Count(ctx, key, now, withIDs, func(ctx context.Context) (Kept, error) {
		var k Kept
		q := db.NewSelect().
			TableExpr(`(?) AS "v"`, version).
			ColumnExpr(`"v"."started", "v"."generation", "v"."changes"`)
		if !withIDs {
			err := q.ColumnExpr(`(?) AS "total"`, count.Clone().ColumnExpr("count(*)")).
				Scan(ctx, &k.Version.Started, &k.Version.Generation, &k.Version.Changes, &k.Total)
			return k, err
		}
		id := `"m"."` + idName + `"`
		matches := db.NewSelect().TableExpr(`(?) AS "m"`, count.Clone().ColumnExpr(idCol)).
			ColumnExpr(`count(*) AS "total"`).
			ColumnExpr(`CASE WHEN count(*) <= ? THEN array_agg(`+id+` ORDER BY `+id+`) END AS "ids"`, c.MaxIDs)
		err := q.TableExpr(`(?) AS "t"`, matches).
			ColumnExpr(`"t"."total", "t"."ids"`).
			Scan(ctx, &k.Version.Started, &k.Version.Generation, &k.Version.Changes, &k.Total, pgdialect.Array(&k.IDs))
		if err == nil && k.IDs == nil && k.Total <= c.MaxIDs {
			k.IDs = []int64{}
		}
		return k, err
	})
}

// KeptIDs returns the total of count kept with its ids at the version
// *now, or at whatever version it was kept when now is nil (the page
// statement then checks it: SameVersion), without counting: false when
// there is none.
func (c *Cache) KeptIDs(version, count *bun.SelectQuery, server string, now *Version) (Kept, bool) {
	key, err := c.Key(version, count, server)
	if err != nil {
		return Kept{}, false
	}
	k, ok := c.Get(key.ID)
	if !ok || k.IDs == nil || now != nil && k.Version != *now {
		return Kept{}, false
	}
	c.Reused.Add(1)
	return k, true
}
