package policy

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// RowOracle answers the scope rule of one resource for one known row: the
// policy's own answer, row by row, that a translation of Scope (storage's
// SQL) must agree with. It is for tests that check such a translation
// (storage's differential test); the request path never uses it, and New
// does not prepare it.
type RowOracle struct {
	resource Resource
	query    rego.PreparedEvalQuery
}

// NewRowOracle prepares data.fleet.scope.<resource> for evaluation on
// known rows, or data.fleet.manage.accounts for ManagementResource (whose
// rows are accounts {id, manager_id, type, grand_manager_id}). It returns
// ErrUnknownResource for a resource without a rule.
func (e *snapshot) NewRowOracle(ctx context.Context, resource Resource) (*RowOracle, error) {
	rule := "data.fleet.scope." + string(resource)
	if resource == ManagementResource {
		rule = "data.fleet.manage.accounts"
	} else if _, ok := e.scopeQ[resource]; !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownResource, resource)
	}
	q, err := e.prepareEval(ctx, rule)
	if err != nil {
		return nil, err
	}
	return &RowOracle{resource: resource, query: q}, nil
}

// Admits reports whether the rule holds for in with row as
// input.<resource>. row holds column values, the virtual columns
// manager_id and granted_to included.
func (o *RowOracle) Admits(ctx context.Context, in Input, row map[string]any) (bool, error) {
	rowValue, err := ast.InterfaceToValue(row)
	if err != nil {
		return false, fmt.Errorf("policy: row of %q: %w", o.resource, err)
	}
	input := in.value()
	input.Insert(ast.StringTerm(string(o.resource)), ast.NewTerm(rowValue))
	rs, err := o.query.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return false, fmt.Errorf("policy: admit %q: %w", o.resource, err)
	}
	b, _ := single(rs).(bool)
	return b, nil
}
