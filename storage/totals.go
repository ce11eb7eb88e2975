package storage

import (
	"context"
	"crypto/sha256"
	"strconv"
	"time"

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
// read with the scope's counter form (compileCounters), as cheap as an
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
// one count (totalsCache.count): a term seen for the first time by many
// clients at once, or just after a write, is counted once, not once per
// request.
//
// A total is kept only from a statement on the Store's pool (a *bun.DB),
// never from inside a transaction, whose own uncommitted writes would show
// in both the count and the version and may roll back. Scopes without a
// counter form (device grants) count rows, as before.
//
// The totals are kept under a hash of their statements, within a budget
// of bytes shared fairly between tenants (totalscache.go).

// keptIDsMax is the most ids kept with one total (totalsCache.maxIDs): a
// search of a scope whose pages walk the table (compiledScope.spread), or
// a list of such a scope whose page would be read as a deferred join,
// keeps the ids of its rows, in order, when it has at most this many, and
// its pages in id order are then read by key (docs/decisions.md, "Kept
// ids"). A list with more rows is dense enough for the walk to find a page
// quickly, or is read as a deferred join.
const keptIDsMax = 50_000

// keptTotal is a total and the version it was counted at, and, for a
// count asked with its ids (Store.keptTotal), the ids of the rows in
// ascending order when there are at most keptIDsMax of them.
type keptTotal struct {
	version countVersion
	total   int64
	ids     []int64
}

// answers reports whether k answers a request that asks for the ids
// (withIDs) or not: a total counted without its ids answers only the
// latter, and is counted again, with them, for the former.
func (k keptTotal) answers(withIDs bool, maxIDs int64) bool {
	return !withIDs || k.ids != nil || k.total > maxIDs
}

// countVersion is the version of a scope's rows (see above).
type countVersion struct {
	started    string
	generation int64
	changes    int64
}

// countResult is what a shared count returns: the total with its version
// and whether it was counted (not found kept), or the error and whether the
// context the count ran under had ended.
type countResult struct {
	kept    keptTotal
	counted bool
	err     error
	expired bool
}

// count returns the total of key at the version now: kept, or counted by
// run once for all the callers that miss it at the same time, and kept. A
// caller that joins the count after it ended finds the kept total. A count
// shared by several is valid for each of them: it reads the version in
// its own snapshot, and that version is now or a later one (a snapshot
// that saw now or newer), never older than what a caller saw before asking.
// The count runs under the context of the caller that started it, without
// its cancellation (a client that goes away does not fail the others) but
// with its deadline; a caller whose own context is still live when a count
// fails because the starter's deadline passed asks again.
func (c *totalsCache) count(ctx context.Context, key totalKey, now countVersion, withIDs bool, run func(context.Context) (keptTotal, error)) (keptTotal, error) {
	if k, ok := c.get(key.id); ok && k.version == now && k.answers(withIDs, c.maxIDs) {
		c.reused.Add(1)
		return k, nil
	}
	flight := string(key.id[:]) + "\x00" + now.started + "\x00" + strconv.FormatInt(now.generation, 10) + "\x00" + strconv.FormatInt(now.changes, 10) + "\x00" + strconv.FormatBool(withIDs)
	for {
		ch := c.flight.DoChan(flight, func() (any, error) {
			if k, ok := c.get(key.id); ok && k.version == now && k.answers(withIDs, c.maxIDs) {
				return countResult{kept: k}, nil
			}
			fctx := context.WithoutCancel(ctx)
			deadline, bounded := ctx.Deadline()
			if bounded {
				var cancel context.CancelFunc
				fctx, cancel = context.WithDeadline(fctx, deadline)
				defer cancel()
			}
			k, err := run(fctx)
			if err != nil {
				// A dial or read that hit the deadline may fail before the
				// context's own timer has fired: the clock decides.
				expired := fctx.Err() != nil || bounded && !time.Now().Before(deadline)
				return countResult{err: err, expired: expired}, nil
			}
			c.counted.Add(1)
			c.put(key, k)
			return countResult{kept: k, counted: true}, nil
		})
		select {
		case <-ctx.Done():
			return keptTotal{}, ctx.Err()
		case r := <-ch:
			res := r.Val.(countResult)
			if res.err != nil && res.expired && live(ctx) {
				continue
			}
			if res.err == nil && (!res.counted || r.Shared) {
				c.reused.Add(1)
			}
			return res.kept, res.err
		}
	}
}

// live reports whether ctx has neither ended nor passed its deadline by
// the clock (its timer may fire a little after a dial that hit the same
// deadline has failed).
func live(ctx context.Context) bool {
	deadline, bounded := ctx.Deadline()
	return ctx.Err() == nil && (!bounded || time.Now().Before(deadline))
}

// versionQuery selects the version of the rows of c's resource that the
// counter form of c admits.
func (s *Store) versionQuery(c *counterSQL) *bun.SelectQuery {
	return withVersion(s.counterRows(c))
}

// withVersion adds to q, a select over counter rows (Store.counterRows),
// the columns of their version: started, generation and changes.
func withVersion(q *bun.SelectQuery) *bun.SelectQuery {
	return q.ColumnExpr(`pg_postmaster_start_time()::text AS started`).
		ColumnExpr(`(SELECT g.generation FROM count_generation AS g) AS generation`).
		ColumnExpr(`COALESCE(sum(` + accountCounters.col("changes") + `), 0)::bigint AS changes`)
}

// keptTotal returns the number of rows count (a SELECT of d's rows in the
// compiled scope c, filters and search applied, without columns) selects,
// from the Store's kept totals when the scope's version is the one it was
// counted at, and otherwise counted now with the version in the same
// statement (one snapshot), once for the requests that miss it together
// (totalsCache.count), and kept. withIDs asks for the ids of the rows too
// (keptAt). It returns false, and the caller counts, when the scope has no
// counter form or the Store runs inside a transaction.
func (s *Store) keptTotal(ctx context.Context, c *compiledScope, d *Descriptor, count *bun.SelectQuery, withIDs bool) (keptTotal, bool, error) {
	if !s.keeps(c, d) {
		return keptTotal{}, false, nil
	}
	var now countVersion
	if err := s.versionQuery(c.counter).Scan(ctx, &now.started, &now.generation, &now.changes); err != nil {
		return keptTotal{}, false, Translate(err)
	}
	return s.keptAt(ctx, c, d, count, withIDs, now)
}

// keeps reports whether the Store keeps totals of the compiled scope c of
// d: a counter form, d's own rows, and statements on a pool.
func (s *Store) keeps(c *compiledScope, d *Descriptor) bool {
	if c.counter == nil || d.scopedBy != "" || s.totals == nil || s.off.KeptTotals {
		return false
	}
	_, pool := s.db.(*bun.DB)
	return pool
}

// totalKey is where count's kept total is kept (totalsCache): the
// SHA-256 of the server (Store.server), the scope's version statement
// (versionQuery) and the count statement, rendered with their values; and
// the tenant it is kept for, the SHA-256 of the version statement alone
// (the scope's counter rows: whose rows it counts). Rendered into a
// reused buffer and hashed, so that neither statement is kept: a scope's
// statements run to tens of KiB, and a filter value of one request would
// otherwise hold them for as long as its total is kept.
func (s *Store) totalKey(version, count *bun.SelectQuery) (totalKey, error) {
	buf := s.totals.buffer()
	defer s.totals.release(buf)
	var err error
	b := (*buf)[:0]
	if b, err = version.AppendQuery(version.DB().QueryGen(), b); err != nil {
		return totalKey{}, err
	}
	k := totalKey{tenant: sha256.Sum256(b)}
	b = append(b, 0)
	b = append(b, s.server...)
	b = append(b, 0)
	c := count.Clone().ColumnExpr("count(*)")
	if b, err = c.AppendQuery(c.DB().QueryGen(), b); err != nil {
		return totalKey{}, err
	}
	k.id = sha256.Sum256(b)
	*buf = b
	return k, nil
}

// keptAt is keptTotal at the version now, which the caller has just read.
// With withIDs the statement that counts also returns the ids of the rows
// in ascending order when there are at most totalsCache.maxIDs (array_agg under a
// CASE on the count), and they are kept and returned with the total, so
// that the list's pages in id order are read by key (pageShape); a total
// kept without its ids does not answer such a request (keptTotal.answers).
func (s *Store) keptAt(ctx context.Context, c *compiledScope, d *Descriptor, count *bun.SelectQuery, withIDs bool, now countVersion) (keptTotal, bool, error) {
	if !s.keeps(c, d) {
		return keptTotal{}, false, nil
	}
	version := s.versionQuery(c.counter)
	key, err := s.totalKey(version, count)
	if err != nil {
		return keptTotal{}, false, err
	}
	if withIDs {
		if prev, ok := s.totals.get(key.id); ok && prev.total > s.totals.maxIDs {
			// Its last count was over the bound: count it without the
			// ids (array_agg collects and sorts every match before the
			// CASE drops them: 200,000 matches among 1,000,000 rows
			// counted in 259-324 ms alone, 545-569 ms with them). A
			// total that fell within the bound does not answer for the
			// ids (keptTotal.answers): the next request counts it with
			// them.
			withIDs = false
		}
	}
	k, err := s.totals.count(ctx, key, now, withIDs, func(ctx context.Context) (keptTotal, error) {
		var k keptTotal
		q := s.db.NewSelect().
			TableExpr(`(?) AS "v"`, version).
			ColumnExpr(`"v"."started", "v"."generation", "v"."changes"`)
		if !withIDs {
			err := q.ColumnExpr(`(?) AS "total"`, count.Clone().ColumnExpr("count(*)")).
				Scan(ctx, &k.version.started, &k.version.generation, &k.version.changes, &k.total)
			return k, Translate(err)
		}
		id := `"m"."` + d.id.Name + `"`
		matches := s.db.NewSelect().TableExpr(`(?) AS "m"`, count.Clone().ColumnExpr(d.col(d.id.Name))).
			ColumnExpr(`count(*) AS "total"`).
			ColumnExpr(`CASE WHEN count(*) <= ? THEN array_agg(`+id+` ORDER BY `+id+`) END AS "ids"`, s.totals.maxIDs)
		err := q.TableExpr(`(?) AS "t"`, matches).
			ColumnExpr(`"t"."total", "t"."ids"`).
			Scan(ctx, &k.version.started, &k.version.generation, &k.version.changes, &k.total, pgdialect.Array(&k.ids))
		if err == nil && k.ids == nil && k.total <= s.totals.maxIDs {
			k.ids = []int64{}
		}
		return k, Translate(err)
	})
	if err != nil {
		return keptTotal{}, false, Translate(err)
	}
	return k, true, nil
}

// keptIDs returns the total of count kept with its ids at the version
// *now, or at whatever version it was kept when now is nil (the page
// statement then checks it: Store.sameVersion), without counting: false
// when there is none.
func (s *Store) keptIDs(c *compiledScope, d *Descriptor, count *bun.SelectQuery, now *countVersion) (keptTotal, bool) {
	if !s.keeps(c, d) || s.off.KeptIDs {
		return keptTotal{}, false
	}
	key, err := s.totalKey(s.versionQuery(c.counter), count)
	if err != nil {
		return keptTotal{}, false
	}
	k, ok := s.totals.get(key.id)
	if !ok || k.ids == nil || now != nil && k.version != *now {
		return keptTotal{}, false
	}
	s.totals.reused.Add(1)
	return k, true
}

// sameVersion returns a statement that selects one row while the version
// of the rows of c's scope is v, and none once it has moved: a page read by
// key from ids kept at v requires it (EXISTS), so that the page is of the
// snapshot of its ids and total.
func (s *Store) sameVersion(c *compiledScope, v countVersion) *bun.SelectQuery {
	return s.db.NewSelect().TableExpr(`(?) AS "v"`, s.versionQuery(c.counter)).
		ColumnExpr("1").
		Where(`"v"."started" = ? AND "v"."generation" = ? AND "v"."changes" = ?`, v.started, v.generation, v.changes)
}
