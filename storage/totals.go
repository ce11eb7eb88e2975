package storage

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/uptrace/bun"
	"golang.org/x/sync/singleflight"
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

// totalsCacheSize bounds how many totals a Store keeps: one per (scope,
// filters, search) recently listed past its first page. An entry is its
// SQL (a few hundred bytes) and four numbers.
const totalsCacheSize = 4096

// totalsCache keeps, per count query (the scope, the filters and the
// search, rendered with their values), the total counted and the version
// of the scope it was counted at. It is shared by the Stores made from one
// (its replicas: the version holds the server). A nil *totalsCache keeps
// nothing.
type totalsCache struct {
	mu    sync.Mutex
	items map[string]keptTotal
	// flight runs one count per (key, version) at a time.
	flight singleflight.Group
	// counted counts the totals counted (no entry, or a stale one);
	// reused the totals answered from an entry or from a count another
	// request was running.
	counted, reused atomic.Int64
}

// keptTotal is a total and the version it was counted at.
type keptTotal struct {
	version countVersion
	total   int64
}

// countVersion is the version of a scope's rows (see above).
type countVersion struct {
	started    string
	generation int64
	changes    int64
}

func newTotalsCache() *totalsCache {
	return &totalsCache{items: make(map[string]keptTotal)}
}

func (c *totalsCache) get(key string) (keptTotal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.items[key]
	return k, ok
}

// put keeps k under key. When the cache is full an arbitrary entry makes
// room: a miss costs one count, as without the cache.
func (c *totalsCache) put(key string, k keptTotal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; !ok && len(c.items) >= totalsCacheSize {
		for old := range c.items {
			delete(c.items, old)
			break
		}
	}
	c.items[key] = k
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
func (c *totalsCache) count(ctx context.Context, key string, now countVersion, run func(context.Context) (keptTotal, error)) (keptTotal, error) {
	if k, ok := c.get(key); ok && k.version == now {
		c.reused.Add(1)
		return k, nil
	}
	flight := key + "\x00" + now.started + "\x00" + strconv.FormatInt(now.generation, 10) + "\x00" + strconv.FormatInt(now.changes, 10)
	for {
		ch := c.flight.DoChan(flight, func() (any, error) {
			if k, ok := c.get(key); ok && k.version == now {
				return countResult{kept: k}, nil
			}
			fctx := context.WithoutCancel(ctx)
			if deadline, ok := ctx.Deadline(); ok {
				var cancel context.CancelFunc
				fctx, cancel = context.WithDeadline(fctx, deadline)
				defer cancel()
			}
			k, err := run(fctx)
			if err != nil {
				return countResult{err: err, expired: fctx.Err() != nil}, nil
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
			if res.err != nil && res.expired && ctx.Err() == nil {
				continue
			}
			if res.err == nil && (!res.counted || r.Shared) {
				c.reused.Add(1)
			}
			return res.kept, res.err
		}
	}
}

// versionQuery selects the version of the rows of c's resource that the
// counter form of c admits.
func (s *Store) versionQuery(c *counterSQL) *bun.SelectQuery {
	t := accountCounters
	args := append([]any{c.resource}, c.where.args...)
	return s.db.NewSelect().
		TableExpr(`"`+t.table+`" AS "`+t.alias+`"`).
		ColumnExpr(`pg_postmaster_start_time()::text AS started`).
		ColumnExpr(`(SELECT g.generation FROM count_generation AS g) AS generation`).
		ColumnExpr(`COALESCE(sum(`+t.col("changes")+`), 0)::bigint AS changes`).
		Where(t.col("resource")+` = ? AND (`+c.where.sql+`)`, args...)
}

// keptTotal returns the number of rows count (a SELECT of d's rows in the
// compiled scope c, filters and search applied, without columns) selects,
// from the Store's kept totals when the scope's version is the one it was
// counted at, and otherwise counted now with the version in the same
// statement (one snapshot), once for the requests that miss it together
// (totalsCache.count), and kept. It returns false, and the caller
// counts, when the scope has no counter form or the Store runs inside a
// transaction.
func (s *Store) keptTotal(ctx context.Context, c *compiledScope, d *Descriptor, count *bun.SelectQuery) (int64, bool, error) {
	if c.counter == nil || d.scopedBy != "" || s.totals == nil {
		return 0, false, nil
	}
	if _, pool := s.db.(*bun.DB); !pool {
		return 0, false, nil
	}
	version := s.versionQuery(c.counter)
	count = count.ColumnExpr("count(*)")
	key := version.String() + "\x00" + count.String()
	var now countVersion
	if err := version.Scan(ctx, &now.started, &now.generation, &now.changes); err != nil {
		return 0, false, Translate(err)
	}
	k, err := s.totals.count(ctx, key, now, func(ctx context.Context) (keptTotal, error) {
		var k keptTotal
		err := s.db.NewSelect().
			TableExpr(`(?) AS "v"`, version).
			ColumnExpr(`"v"."started", "v"."generation", "v"."changes"`).
			ColumnExpr(`(?) AS "total"`, count).
			Scan(ctx, &k.version.started, &k.version.generation, &k.version.changes, &k.total)
		return k, Translate(err)
	})
	if err != nil {
		return 0, false, Translate(err)
	}
	return k.total, true, nil
}
