package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// ErrScope is wrapped by every error of Scope: the policy's answer cannot
// be turned into a safe row filter, so the query must not run (fail closed).
var ErrScope = errors.New("policy: scope")

// ErrUnknownResource is returned for a resource that has no scope rule.
var ErrUnknownResource = errors.New("policy: unknown resource")

// Resources returns the tenant resources that have a scope rule
// (data.fleet.scope.<resource>), in a fixed order.
func Resources() []string {
	return []string{"services", "reports", "events", "passengers"}
}

// Scope compiles data.fleet.scope.<resource> for in into the rows the
// principal may see. The rule is partially evaluated with input.<resource>
// unknown and its UCAST residue becomes RowScope.Where. It returns
// ErrUnknownResource for a resource without a rule and an error wrapping
// ErrScope when the residue cannot be used: a field of another table, a
// nested field, an unknown operator, a residue that Options.ValidateScope
// rejects, or no restriction for a principal that data.fleet.scope.unrestricted
// does not mark. The result is shared with the cache: do not modify it.
func (e *Engine) Scope(ctx context.Context, in Input, resource string) (RowScope, error) {
	ctx, span := e.tracer.Start(ctx, "policy.scope")
	defer span.End()
	span.SetAttributes(
		attribute.String("fleet.scope.resource", resource),
		attribute.String("fleet.policy.revision", e.revision),
	)
	rs, cached, err := e.scope(ctx, in, resource)
	span.SetAttributes(attribute.Bool("fleet.policy.cached", cached))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "scope compilation failed")
		return RowScope{}, err
	}
	return rs, nil
}

func (e *Engine) scope(ctx context.Context, in Input, resource string) (RowScope, bool, error) {
	if !slices.Contains(Resources(), resource) {
		return RowScope{}, false, fmt.Errorf("%w: %q", ErrUnknownResource, resource)
	}
	key, err := e.cacheKey("scope", resource, in)
	if err != nil {
		return RowScope{}, false, err
	}
	v, ok := e.cache.get(key)
	e.countLookup(ctx, "scope", ok)
	if ok {
		return v.(RowScope), true, nil
	}
	rs, err := e.compileScope(ctx, in, resource)
	if err != nil {
		return RowScope{}, false, err
	}
	e.cache.put(key, rs)
	return rs, false, nil
}

// compileScope runs the prepared partial evaluation and checks its result.
func (e *Engine) compileScope(ctx context.Context, in Input, resource string) (RowScope, error) {
	input := in.value()
	filters, err := e.scopeQ[resource].Compile(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return RowScope{}, fmt.Errorf("%w: compile %q: %w", ErrScope, resource, err)
	}
	rs := RowScope{Resource: resource}
	switch q := filters.One().Query.(type) {
	case nil:
		rs.None = true
	case map[string]any:
		if len(q) == 0 {
			unrestricted, err := e.unrestricted(ctx, input)
			if err != nil {
				return RowScope{}, fmt.Errorf("%w: %q: %w", ErrScope, resource, err)
			}
			if !unrestricted {
				return RowScope{}, fmt.Errorf("%w: %q: empty condition (no restriction) for a principal that is not unrestricted", ErrScope, resource)
			}
			rs.Unrestricted = true
			break
		}
		where, err := conditionFromUCAST(resource, q)
		if err != nil {
			return RowScope{}, fmt.Errorf("%w: %q: %w", ErrScope, resource, err)
		}
		rs.Where = &where
	default:
		return RowScope{}, fmt.Errorf("%w: %q: unexpected query %T", ErrScope, resource, q)
	}
	if e.validate != nil {
		if err := e.validate(rs); err != nil {
			return RowScope{}, fmt.Errorf("%w: %q rejected by the storage check: %w", ErrScope, resource, err)
		}
	}
	return rs, nil
}

// unrestricted evaluates data.fleet.scope.unrestricted (undefined = false).
func (e *Engine) unrestricted(ctx context.Context, input ast.Value) (bool, error) {
	rs, err := e.unrestrictedQ.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return false, err
	}
	b, _ := single(rs).(bool)
	return b, nil
}

// Admits reports whether data.fleet.scope.<resource> holds for in with the
// known row as input.<resource>: the policy's answer for one row, used to
// check the SQL translation. row holds column values, the virtual columns
// manager_id and granted_to included. It returns ErrUnknownResource for a
// resource without a rule.
func (e *Engine) Admits(ctx context.Context, in Input, resource string, row map[string]any) (bool, error) {
	q, ok := e.admitQ[resource]
	if !ok {
		return false, fmt.Errorf("%w: %q", ErrUnknownResource, resource)
	}
	rowValue, err := ast.InterfaceToValue(row)
	if err != nil {
		return false, fmt.Errorf("policy: row of %q: %w", resource, err)
	}
	input := in.value()
	input.Insert(ast.StringTerm(resource), ast.NewTerm(rowValue))
	rs, err := q.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return false, fmt.Errorf("policy: admit %q: %w", resource, err)
	}
	b, _ := single(rs).(bool)
	return b, nil
}
