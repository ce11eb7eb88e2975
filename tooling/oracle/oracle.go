// Package oracle answers a policy set's scope rules on known rows: the
// policy's own answer, row by row, that a translation of a scope (storage's
// SQL) must agree with. Storage's differential tests and `fleetapi policy
// diff` on synthetic rows use it; the request path never imports it
// (cmd/fleetapi/layout_test.go), and policy.New does not prepare it.
package oracle

import (
	"context"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/fleetapi/fleetapi/policy"
)

// Oracle answers the scope rule of one resource for one known row.
type Oracle struct {
	resource policy.Resource
	query    rego.PreparedEvalQuery
}

// New prepares data.fleet.scope.<resource> of the revision pinned in ctx
// (or in force) of e for evaluation on known rows, or
// data.fleet.manage.accounts for policy.ManagementResource (whose rows are
// accounts {id, manager_id, type, grand_manager_id}). It returns
// policy.ErrUnknownResource for a resource that is not one of e's.
func New(ctx context.Context, e *policy.Engine, resource policy.Resource) (*Oracle, error) {
	rule := "data.fleet.scope." + string(resource)
	if resource == policy.ManagementResource {
		rule = "data.fleet.manage.accounts"
	} else if !slices.Contains(e.Resources(), resource) {
		return nil, fmt.Errorf("%w: %q", policy.ErrUnknownResource, resource)
	}
	q, err := e.PrepareRule(ctx, rule)
	if err != nil {
		return nil, err
	}
	return &Oracle{resource: resource, query: q}, nil
}

// Admits reports whether the rule holds for in with row as
// input.<resource>. row holds column values, the virtual columns
// manager_id and granted_to included.
func (o *Oracle) Admits(ctx context.Context, in policy.Input, row map[string]any) (bool, error) {
	rowValue, err := ast.InterfaceToValue(row)
	if err != nil {
		return false, fmt.Errorf("policy: row of %q: %w", o.resource, err)
	}
	input := in.Document()
	input.Insert(ast.StringTerm(string(o.resource)), ast.NewTerm(rowValue))
	rs, err := o.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return false, fmt.Errorf("policy: admit %q: %w", o.resource, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return false, nil
	}
	b, _ := rs[0].Expressions[0].Value.(bool)
	return b, nil
}
