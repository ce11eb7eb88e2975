package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/policy"
)

// ScopeCounts counts the rows of scope.Resource that scope admits twice:
// through the page shape of the scope (scopeSQL) and through its counting
// shape (scopeCountSQL), and returns the counting SQL. It exists for the
// external test package.
func (s *Store) ScopeCounts(ctx context.Context, scope policy.RowScope) (page, count int64, countSQL string, err error) {
	model, ok := map[string]any{
		"services": (*Service)(nil), "reports": (*Report)(nil), "events": (*Event)(nil), "passengers": (*Passenger)(nil),
	}[scope.Resource]
	if !ok {
		return 0, 0, "", ErrScope
	}
	q, err := s.scopedSelect(scope, model)
	if err != nil {
		return 0, 0, "", err
	}
	if page, err = q.Count(ctx); err != nil {
		return 0, 0, "", err
	}
	c, err := s.scopedCount(scope, model)
	if err != nil {
		return 0, 0, "", err
	}
	count, err = c.Count(ctx)
	return page, count, c.String(), err
}
