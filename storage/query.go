package storage

import (
	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
)

// scopedSelect starts a SELECT on a tenant table that is already restricted
// by the caller's row scope. It is the only way storage builds a query on
// tenant data: without a scope that translates there is no query, only
// ErrScope. model is the bun model of scope.Resource's table.
func (s *Store) scopedSelect(scope policy.RowScope, model any) (*bun.SelectQuery, error) {
	where, args, err := scopeSQL(scope)
	if err != nil {
		return nil, err
	}
	return s.db.NewSelect().Model(model).Where(where, args...), nil
}

// scopedCount starts a SELECT for counting the rows of a tenant table that
// the caller's row scope admits, with the scope in its counting shape
// (scopeCountSQL). model is the bun model of scope.Resource's table.
func (s *Store) scopedCount(scope policy.RowScope, model any) (*bun.SelectQuery, error) {
	where, args, err := scopeCountSQL(scope)
	if err != nil {
		return nil, err
	}
	return s.db.NewSelect().Model(model).Where(where, args...), nil
}
