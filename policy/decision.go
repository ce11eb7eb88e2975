package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// ErrUndefined: a policy query had no result, or one of the wrong shape
// (a replaced policy set that lacks a rule).
var ErrUndefined = errors.New("policy: undefined result")

// Decision is the answer of data.fleet.authz.decision.
type Decision struct {
	Allow   bool           `json:"allow"`
	Code    string         `json:"code,omitempty"`
	Message string         `json:"message,omitempty"`
	Details map[string]any `json:"details,omitempty"`
}

// Decide evaluates data.fleet.authz.decision for in: may this principal
// call in.Request? A denial is a Decision, not an error; the error
// (ErrUndefined or an evaluation error) means no decision could be made and
// the request must fail. Every call writes one decision log line.
func (e *snapshot) Decide(ctx context.Context, in Input) (Decision, error) {
	ctx, span := e.tracer.Start(ctx, "policy.decide")
	defer span.End()
	start := time.Now()
	d, cached, err := e.decide(ctx, in)
	elapsed := time.Since(start)
	span.SetAttributes(
		attribute.Bool("fleet.policy.cached", cached),
		attribute.String("fleet.policy.revision", e.revision),
	)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "policy decision failed")
		e.logDecision(ctx, in, Decision{Code: "POLICY_ERROR"}, elapsed, cached, err)
		return Decision{}, err
	}
	code := d.Code
	if d.Allow {
		code = "ALLOW"
	}
	span.SetAttributes(attribute.String("fleet.decision.code", code))
	if code == "ALLOW" {
		e.allowed.n.Add(1)
	} else {
		e.decisions.add(attribute.String("code", code), attribute.String("action", ActionRoute))
	}
	e.logDecision(ctx, in, d, elapsed, cached, nil)
	return d, nil
}

func (e *snapshot) decide(ctx context.Context, in Input) (Decision, bool, error) {
	key := e.cacheKey("decide", "", in)
	d, hit, err := cached(e, "decide", key, func() (Decision, error) {
		rs, err := e.decideQ.Eval(ctx, rego.EvalParsedInput(in.value()))
		if err != nil {
			return Decision{}, fmt.Errorf("evaluate decision: %w", err)
		}
		return decisionFrom(rs)
	})
	if err != nil {
		return Decision{}, false, err
	}
	return cloneDecision(d), hit, nil
}

// decisionFrom reads the decision object; anything malformed is an error
// (fail closed).
func decisionFrom(rs rego.ResultSet) (Decision, error) {
	m, ok := single(rs).(map[string]any)
	if !ok {
		return Decision{}, fmt.Errorf("%w: data.fleet.authz.decision is not an object", ErrUndefined)
	}
	var d Decision
	if d.Allow, ok = m["allow"].(bool); !ok {
		return Decision{}, fmt.Errorf("%w: decision.allow is not a boolean", ErrUndefined)
	}
	if d.Allow {
		return d, nil
	}
	d.Code, _ = m["code"].(string)
	d.Message, _ = m["message"].(string)
	d.Details, _ = m["details"].(map[string]any)
	if d.Code == "" {
		return Decision{}, fmt.Errorf("%w: a denial without a code", ErrUndefined)
	}
	return d, nil
}

func cloneDecision(d Decision) Decision {
	d.Details = maps.Clone(d.Details)
	return d
}

// single returns the value of a one-expression result set, or nil.
func single(rs rego.ResultSet) any {
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil
	}
	return rs[0].Expressions[0].Value
}

// ActionRoute is the action label of a route decision (data.fleet.authz)
// in fleet.policy.decisions; a management decision carries its action
// (account.create, ...). Every series has both labels, code and action.
const ActionRoute = "route"
