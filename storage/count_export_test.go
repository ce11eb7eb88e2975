package storage

import (
	"context"

	"github.com/fleetapi/fleetapi/policy"
)

// ScopeCounts counts the rows of scope.Resource() that scope admits twice:
// through the page shape of the scope and through its counting shape
// (compileScope), and returns the counting SQL. It exists for the
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

// CountedTotal returns the total of scope's rows from the row counters
// (ok false when the scope has no counter form) and the number of rows the
// scope admits, counted. It exists for the counters' differential test.
func (s *Store) CountedTotal(ctx context.Context, scope policy.Scope) (counted int64, ok bool, rows int64, err error) {
	d := descriptorOf(scope.Resource())
	if d == nil {
		return 0, false, 0, policy.ErrScope
	}
	if counted, ok, err = s.countedTotal(ctx, scope, d); err != nil {
		return 0, false, 0, err
	}
	q, err := s.scopedCount(scope, d, modelOf(d))
	if err != nil {
		return 0, false, 0, err
	}
	n, err := q.Count(ctx)
	return counted, ok, int64(n), err
}

// CountedTables returns the tables whose rows the counters count.
func CountedTables() []string {
	return countedTables()
}
