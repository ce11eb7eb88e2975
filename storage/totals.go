package storage

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage/internal/paging"
)

// The kept totals and ids of the lists are the paging layer's
// (internal/paging: kept.go says what a version is and why a total kept at
// one is right, cache.go how they are bounded); this file gives it the
// Store's statements: the version of a compiled scope's rows, read with
// its counter form (compileCounters), and the pool that counts. A total is
// kept only from a statement on the Store's pool (a *bun.DB), never from
// inside a transaction, whose own uncommitted writes would show in both
// the count and the version and may roll back. Scopes without a counter
// form (device grants) count rows.

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
// statement (one snapshot), once for the requests that miss it together,
// and kept (paging.Cache.Keep). withIDs asks for the ids of the rows too.
// It returns false, and the caller counts, when the Store keeps no totals
// of the scope (keeps).
func (s *Store) keptTotal(ctx context.Context, c *compiledScope, d *Descriptor, count *bun.SelectQuery, withIDs bool) (paging.Kept, bool, error) {
	if !s.keeps(c, d) {
		return paging.Kept{}, false, nil
	}
	var now paging.Version
	if err := s.versionQuery(c.counter).Scan(ctx, &now.Started, &now.Generation, &now.Changes); err != nil {
		return paging.Kept{}, false, Translate(err)
	}
	return s.keptAt(ctx, c, d, count, withIDs, now)
}

// keeps reports whether the Store keeps totals of the compiled scope c of
// d: a counter form, d's own rows, statements on a pool, and kept totals
// not switched off (WithShapesOff).
func (s *Store) keeps(c *compiledScope, d *Descriptor) bool {
	if c.counter == nil || d.scopedBy != "" || s.totals == nil || s.off.KeptTotals {
		return false
	}
	_, pool := s.db.(*bun.DB)
	return pool
}

// keptAt is keptTotal at the version now, which the caller has just read
// (paging.Cache.Keep).
func (s *Store) keptAt(ctx context.Context, c *compiledScope, d *Descriptor, count *bun.SelectQuery, withIDs bool, now paging.Version) (paging.Kept, bool, error) {
	if !s.keeps(c, d) {
		return paging.Kept{}, false, nil
	}
	k, err := s.totals.Keep(ctx, s.db, s.versionQuery(c.counter), count, s.server, d.col(d.id.Name), d.id.Name, withIDs, now)
	if err != nil {
		return paging.Kept{}, false, Translate(err)
	}
	return k, true, nil
}

// keptIDs returns the total of count kept with its ids at the version
// *now, or at whatever version it was kept when now is nil (the page
// statement then checks it: sameVersion), without counting: false when
// there is none (paging.Cache.KeptIDs).
func (s *Store) keptIDs(c *compiledScope, d *Descriptor, count *bun.SelectQuery, now *paging.Version) (paging.Kept, bool) {
	if !s.keeps(c, d) || s.off.KeptIDs {
		return paging.Kept{}, false
	}
	return s.totals.KeptIDs(s.versionQuery(c.counter), count, s.server, now)
}

// sameVersion returns a statement that selects one row while the version
// of the rows of c's scope is v, and none once it has moved
// (paging.SameVersion).
func (s *Store) sameVersion(c *compiledScope, v paging.Version) *bun.SelectQuery {
	return paging.SameVersion(s.db, s.versionQuery(c.counter), v)
}
