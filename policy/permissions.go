package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/open-policy-agent/opa/v1/rego"
	"go.opentelemetry.io/otel/attribute"
)

// Permissions is the effective permission object of GET /me
// (data.fleet.authz.permissions, docs/design.md §5): whether the account is
// read-only, the privileges it holds, the token's permissions as granted,
// and for each route ("METHOD /route") whether it is allowed.
type Permissions struct {
	ReadOnly   bool
	Privileges []string
	Token      []string
	Routes     map[string]bool
}

// clone is a copy of p that shares nothing with it.
func (p Permissions) clone() Permissions {
	return Permissions{ReadOnly: p.ReadOnly, Privileges: slices.Clone(p.Privileges), Token: slices.Clone(p.Token), Routes: maps.Clone(p.Routes)}
}

// Permissions evaluates data.fleet.authz.permissions for in: the effective
// permission object of GET /me. in.Request is not read by the embedded
// policy. The answer is decoded once into Permissions and cached so; the
// result is the caller's own copy. It returns ErrUndefined when the
// policy yields no object or one of another shape.
func (e *snapshot) Permissions(ctx context.Context, in Input) (Permissions, error) {
	ctx, span := e.tracer.Start(ctx, "policy.permissions")
	defer span.End()
	span.SetAttributes(attribute.String("fleet.policy.revision", e.revision))
	key := e.cacheKey("permissions", "", in)
	v, ok := e.cache.get(key)
	e.countLookup("permissions", ok)
	if ok {
		span.SetAttributes(attribute.Bool("fleet.policy.cached", true))
		return v.(Permissions).clone(), nil
	}
	span.SetAttributes(attribute.Bool("fleet.policy.cached", false))
	rs, err := e.permissionsQ.Eval(ctx, rego.EvalParsedInput(in.value()))
	if err != nil {
		span.RecordError(err)
		return Permissions{}, fmt.Errorf("evaluate permissions: %w", err)
	}
	p, err := decodePermissions(single(rs))
	if err != nil {
		return Permissions{}, err
	}
	e.cache.put(key, p)
	return p.clone(), nil
}

// decodePermissions reads the permission object of the policy: an object
// with the boolean read_only, the string arrays privileges and token, and
// the object routes of booleans (other keys are ignored). Anything else is
// ErrUndefined: a policy that answers in another shape is a broken policy,
// not an answer.
func decodePermissions(v any) (Permissions, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Permissions{}, fmt.Errorf("%w: data.fleet.authz.permissions is not an object", ErrUndefined)
	}
	bad := func(field string) (Permissions, error) {
		return Permissions{}, fmt.Errorf("%w: data.fleet.authz.permissions.%s has the wrong type", ErrUndefined, field)
	}
	var p Permissions
	if p.ReadOnly, ok = m["read_only"].(bool); !ok {
		return bad("read_only")
	}
	strs := func(field string) ([]string, bool) {
		raw, ok := m[field].([]any)
		if !ok {
			return nil, false
		}
		out := make([]string, len(raw))
		for i, x := range raw {
			if out[i], ok = x.(string); !ok {
				return nil, false
			}
		}
		return out, true
	}
	if p.Privileges, ok = strs("privileges"); !ok {
		return bad("privileges")
	}
	if p.Token, ok = strs("token"); !ok {
		return bad("token")
	}
	routes, ok := m["routes"].(map[string]any)
	if !ok {
		return bad("routes")
	}
	p.Routes = make(map[string]bool, len(routes))
	for r, x := range routes {
		if p.Routes[r], ok = x.(bool); !ok {
			return bad("routes")
		}
	}
	return p, nil
}
