package policy

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/rego"
	"go.opentelemetry.io/otel/attribute"
)

// Permissions evaluates data.fleet.authz.permissions for in: the effective
// permission object of GET /me (read_only, privileges, token, routes).
// in.Request is not read by the embedded policy. The result is the
// caller's own copy. It returns ErrUndefined when the policy yields no
// object.
func (e *snapshot) Permissions(ctx context.Context, in Input) (map[string]any, error) {
	ctx, span := e.tracer.Start(ctx, "policy.permissions")
	defer span.End()
	span.SetAttributes(attribute.String("fleet.policy.revision", e.revision))
	key := e.cacheKey("permissions", "", in)
	v, ok := e.cache.get(key)
	e.countLookup(ctx, "permissions", ok)
	if ok {
		span.SetAttributes(attribute.Bool("fleet.policy.cached", true))
		return deepCopy(v).(map[string]any), nil
	}
	span.SetAttributes(attribute.Bool("fleet.policy.cached", false))
	rs, err := e.permissionsQ.Eval(ctx, rego.EvalParsedInput(in.value()))
	if err != nil {
		span.RecordError(err)
		return nil, fmt.Errorf("evaluate permissions: %w", err)
	}
	m, ok := single(rs).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: data.fleet.authz.permissions is not an object", ErrUndefined)
	}
	e.cache.put(key, m)
	return deepCopy(m).(map[string]any), nil
}

// deepCopy copies a JSON-like value (maps, slices, scalars).
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = deepCopy(x)
		}
		return s
	default:
		return v
	}
}
