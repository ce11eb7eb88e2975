package storage

import (
	"fmt"
	"reflect"

	"github.com/fleetapi/fleetapi/policy"
)

// rawScope is a row scope spelled out, for testing the translator on trees
// the policy engine would never make (a policy.Scope only the engine can
// make).
type rawScope struct {
	Resource     string
	Unrestricted bool
	None         bool
	Where        *policy.Condition
}

// scopeSQL translates rs in the page shape, as compileScope does.
func scopeSQL(rs rawScope) (string, []any, error) {
	d := descriptorOf(policy.Resource(rs.Resource))
	if d == nil {
		return "", nil, fmt.Errorf("%w: unknown resource %q", policy.ErrScope, rs.Resource)
	}
	sql, args, _, err := translateScope(d, rs.Unrestricted, rs.None, rs.Where, false)
	return sql, args, err
}

// modelOf returns a nil pointer to the bun model of d's table.
func modelOf(d *Descriptor) any { return reflect.Zero(reflect.PointerTo(d.model)).Interface() }
