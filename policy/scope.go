package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/rego/compile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// ErrScope is wrapped by every error about a row scope: the policy's
// answer cannot be turned into a safe row filter (Engine.Scope), or a
// scope is used where it does not belong (storage), so the query must not
// run (fail closed).
var ErrScope = errors.New("policy: scope")

// ErrUnknownResource is returned for a resource that has no scope rule.
var ErrUnknownResource = errors.New("policy: unknown resource")

// Resource names a tenant resource: the rule data.fleet.scope.<resource>
// decides which of its rows a caller sees, and input.<resource> is the row
// in that rule. The resources are declared by storage (storage.Resources)
// and passed to New in Options.Resources.
type Resource string

// Scope is the compiled row scope of one resource for one account: exactly
// one of Unrestricted (every row), None (no row) or Where (the condition a
// row must meet) holds. Only the Engine makes one, so a Scope in hand was
// answered by the policy; the zero Scope is of no resource and admits
// nothing. Its user turns it into its own query language itself (storage
// translates it into SQL and keeps the translation by Key): the engine
// never calls back.
type Scope struct {
	resource     Resource
	unrestricted bool
	none         bool
	where        *Condition
	key          string
}

// Resource returns the resource the scope is of.
func (s Scope) Resource() Resource { return s.resource }

// Unrestricted reports whether the scope admits every row.
func (s Scope) Unrestricted() bool { return s.unrestricted }

// None reports whether the scope admits no row.
func (s Scope) None() bool { return s.none }

// Where returns the condition a row must meet, and whether there is one.
// The condition is shared with the cache: do not modify it.
func (s Scope) Where() (Condition, bool) {
	if s.where == nil {
		return Condition{}, false
	}
	return *s.where, true
}

// Key identifies the answer: the policy revision, the resource and the
// account facts the scope was compiled from, exactly what the engine's
// own cache is keyed by. Two scopes with the same Key are the same
// answer, so a user may cache what it makes of a scope by its Key
// (storage's compiled SQL). The zero Scope's Key is empty.
func (s Scope) Key() string { return s.key }

// MarshalJSON renders the scope for logs and golden files:
// {"Resource":…,"Unrestricted":…,"None":…,"Where":…}. The key is not
// part of it.
func (s Scope) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Resource     Resource
		Unrestricted bool
		None         bool
		Where        *Condition
	}{s.resource, s.unrestricted, s.none, s.where})
}

// Scope compiles data.fleet.scope.<resource> for the account of in into
// the rows it may see. The rule is partially evaluated with input.<resource>
// unknown and input.account alone known (the scope depends on the account,
// not on the token or the route), and its UCAST residue becomes the
// Scope's condition. The answer is cached by the policy revision, the
// resource and the account (Scope.Key).
// It returns ErrUnknownResource for a resource without a rule and an error
// wrapping ErrScope when the residue cannot be used: a field of another
// table, a nested field, an unknown operator, or no restriction for a
// principal that data.fleet.scope.unrestricted does not mark.
func (e *snapshot) Scope(ctx context.Context, in Input, resource Resource) (Scope, error) {
	return e.tracedScope(ctx, resource, func(ctx context.Context) (Scope, bool, error) {
		return e.scope(ctx, scopeInput{Account: in.Account}, resource)
	})
}

// tracedScope runs compile, which returns a scope of resource and whether
// it came from the cache, in the span policy.scope, and records the
// answer's origin and any error on it.
func (e *snapshot) tracedScope(ctx context.Context, resource Resource, compile func(context.Context) (Scope, bool, error)) (Scope, error) {
	ctx, span := e.tracer.Start(ctx, "policy.scope")
	defer span.End()
	span.SetAttributes(
		attribute.String("fleet.scope.resource", string(resource)),
		attribute.String("fleet.policy.revision", e.revision),
	)
	s, cached, err := compile(ctx)
	span.SetAttributes(attribute.Bool("fleet.policy.cached", cached))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "scope compilation failed")
		return Scope{}, err
	}
	return s, nil
}

func (e *snapshot) scope(ctx context.Context, in scopeInput, resource Resource) (Scope, bool, error) {
	if _, ok := e.scopeQ[resource]; !ok {
		return Scope{}, false, fmt.Errorf("%w: %q", ErrUnknownResource, resource)
	}
	key := e.scopeKey("scope", string(resource), in)
	return cached(e, "scope", key, func() (Scope, error) {
		s, err := e.compileScope(ctx, in, resource)
		s.key = key
		return s, err
	})
}

// compileScope runs the prepared partial evaluation and checks its result.
func (e *snapshot) compileScope(ctx context.Context, in scopeInput, resource Resource) (Scope, error) {
	return e.compileWith(ctx, in, resource, e.scopeQ[resource], e.unrestrictedQ)
}

// compileWith compiles the scope rule prepared as prep for resource, with
// unrestrictedQ marking the principals for whom an empty residue is
// allowed: the row scopes (compileScope) and the management scope.
func (e *snapshot) compileWith(ctx context.Context, in scopeInput, resource Resource, prep *compile.Prepared, unrestrictedQ rego.PreparedEvalQuery) (Scope, error) {
	input := in.value()
	filters, err := prep.Compile(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return Scope{}, fmt.Errorf("%w: compile %q: %w", ErrScope, resource, err)
	}
	s := Scope{resource: resource}
	switch q := filters.One().Query.(type) {
	case nil:
		s.none = true
	case map[string]any:
		if len(q) == 0 {
			unrestricted, err := isUnrestricted(ctx, unrestrictedQ, input)
			if err != nil {
				return Scope{}, fmt.Errorf("%w: %q: %w", ErrScope, resource, err)
			}
			if !unrestricted {
				return Scope{}, fmt.Errorf("%w: %q: empty condition (no restriction) for a principal that is not unrestricted", ErrScope, resource)
			}
			s.unrestricted = true
			break
		}
		where, err := conditionFromUCAST(string(resource), q)
		if err != nil {
			return Scope{}, fmt.Errorf("%w: %q: %w", ErrScope, resource, err)
		}
		s.where = &where
	default:
		return Scope{}, fmt.Errorf("%w: %q: unexpected query %T", ErrScope, resource, q)
	}
	return s, nil
}

// isUnrestricted evaluates q, data.fleet.scope.unrestricted or
// data.fleet.manage.unrestricted (undefined = false).
func isUnrestricted(ctx context.Context, q rego.PreparedEvalQuery, input ast.Value) (bool, error) {
	rs, err := q.Eval(ctx, rego.EvalParsedInput(input))
	if err != nil {
		return false, err
	}
	b, _ := single(rs).(bool)
	return b, nil
}
