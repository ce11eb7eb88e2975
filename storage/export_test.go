package storage

import (
	"context"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
)

// ScopedIDs returns, among the rows of scope.Resource with the given ids,
// the ids of those that scope admits, through scopedSelect; and the SQL it
// ran. It exists for the differential test of the external test package.
func (s *Store) ScopedIDs(ctx context.Context, scope policy.RowScope, ids []int64) ([]int64, string, error) {
	m, ok := goldenModels[scope.Resource]
	if !ok {
		return nil, "", ErrScope
	}
	q, err := s.scopedSelect(scope, m.model)
	if err != nil {
		return nil, "", err
	}
	alias := scopeTables[scope.Resource].alias
	q = q.Column(m.id).Where(`"`+alias+`"."`+m.id+`" = ANY(?)`, pgdialect.Array(ids)).OrderExpr(`"` + alias + `"."` + m.id + `"`)
	out := []int64{}
	if err := q.Scan(ctx, &out); err != nil {
		return nil, q.String(), Translate(err)
	}
	return out, q.String(), nil
}
