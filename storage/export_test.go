package storage

import (
	"context"
	"fmt"
	"reflect"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/internal/paging"
)

// ScopedIDs returns, among the rows of scope.Resource() with the given ids,
// the ids of those that scope admits, through scopedSelect; and the SQL it
// ran. It exists for the differential test of the external test package.
func (s *Store) ScopedIDs(ctx context.Context, scope policy.Scope, ids []int64) ([]int64, string, error) {
	d := descriptorOf(scope.Resource())
	if d == nil {
		return nil, "", policy.ErrScope
	}
	q, err := s.scopedSelect(scope, d, modelOf(d))
	if err != nil {
		return nil, "", err
	}
	id := d.col(d.id.Name)
	q = q.Column(d.id.Name).Where(id+` = ANY(?)`, pgdialect.Array(ids)).OrderExpr(id)
	out := []int64{}
	if err := q.Scan(ctx, &out); err != nil {
		return nil, q.String(), Translate(err)
	}
	return out, q.String(), nil
}

// ModelType returns the descriptor's bun model type, for the differential
// test's world, which stores rows of every declared resource.
func (d *Descriptor) ModelType() reflect.Type { return d.model }

// ExecInTx runs a statement with the store's handle (a ManagementWrite's
// transaction in the tests of ManageInTx).
func ExecInTx(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.db.NewRaw(query, args...).Exec(ctx)
	return err
}

// PageShape returns the shape List would choose (paging.Rows, without
// the peek at ids kept at another version) for the page req selects
// among the rows scope admits, by its name in paging.Explain: "walk",
// "keyset", "deferred" or "ids".
func PageShape(ctx context.Context, s *Store, scope policy.Scope, req ListRequest) (string, error) {
	d := descriptorOf(scope.Resource())
	c, err := s.compiledFor(scope, d)
	if err != nil {
		return "", err
	}
	p := &pageFacts{ctx: ctx, d: d, req: req, src: s.listSource(d, c)}
	sh, err := p.choose()
	return string(paging.Explain(sh.row, len(paging.Totals)-1).Shape), err
}

// ServicePageIDs returns the ids of the services of the page req selects
// among those scope admits, read in the shape how names ("walk",
// "deferred", or "ids": by key from the ids kept with the total of req's
// filters and search, Store.keptTotal), whatever List would choose: for
// the differential test of the shapes. "ids" fails when no ids are kept.
func ServicePageIDs(ctx context.Context, s *Store, scope policy.Scope, req ListRequest, how string) ([]int64, bool, error) {
	d := Services.Descriptor
	c, err := s.compiledFor(scope, d)
	if err != nil {
		return nil, false, err
	}
	src := s.listSource(d, c)
	sh := shape{total: -1, deferred: how == "deferred"}
	if how == "ids" {
		count, err := src.start((*Service)(nil), true)
		if err != nil {
			return nil, false, err
		}
		if err := applyFilters(count, d, req); err != nil {
			return nil, false, err
		}
		kept, ok, err := s.keptTotal(ctx, c, d, count, true)
		if err != nil {
			return nil, false, err
		}
		if !ok || kept.IDs == nil {
			return nil, false, fmt.Errorf("no ids kept for %+v", req)
		}
		sh.ids, sh.current = kept.IDs, s.sameVersion(c, kept.Version)
	}
	items, next, err := pageRows[Service](ctx, d, req, src.start, sh)
	if err != nil {
		return nil, false, err
	}
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.ServiceID
	}
	return ids, next != nil, nil
}

// DeferPage exposes paging.DeferPage.
var DeferPage = paging.DeferPage

// StatementOperation is statementOperation, for the span names' test.
var StatementOperation = statementOperation
