package storage

import (
	"context"
	"reflect"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
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

// WriteAuditEvent exposes writeAuditEvent to the external tests.
var WriteAuditEvent = writeAuditEvent

// ExecInTx runs a statement with the store's handle (a ManagementWrite's
// transaction in the tests of ManageInTx).
func ExecInTx(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.db.NewRaw(query, args...).Exec(ctx)
	return err
}
