package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/policy"
)

// ScopeCounts counts the rows of scope.Resource() that scope admits twice:
// through the page shape of the scope and through its counting shape
// (CompileScope), and returns the counting SQL. It exists for the
// external test package.
func (s *Store) ScopeCounts(ctx context.Context, scope policy.Scope) (page, count int64, countSQL string, err error) {
	d := descriptorOf(scope.Resource())
	if d == nil {
		return 0, 0, "", policy.ErrScope
	}
	model := modelOf(d)
	q, err := s.scopedSelect(scope, d, model)
	if err != nil {
		return 0, 0, "", err
	}
	if page, err = q.Count(ctx); err != nil {
		return 0, 0, "", err
	}
	c, err := s.scopedCount(scope, d, model)
	if err != nil {
		return 0, 0, "", err
	}
	count, err = c.Count(ctx)
	return page, count, c.String(), err
}
