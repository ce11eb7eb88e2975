package api

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/go-fuego/fuego"
)

// The management guard (docs/design.md §9): the route decision of the guard has
// already checked the token's permission, write access and the caller's
// state; a management write then loads its target inside the caller's
// management scope (404 outside, like a missing id) and asks
// data.fleet.manage.decision, whose denial is 403 MANAGEMENT_DENIED with
// details.reason.

// manager is an authenticated call with its management scope.
type manager struct {
	call
	scope policy.Scope
}

// managerFrom returns the caller of ctx and its management scope.
func (s *Server) managerFrom(ctx context.Context) (manager, error) {
	cl, ok := callFrom(ctx)
	if !ok {
		return manager{}, errors.New("management route: no authenticated call in context")
	}
	scope, err := s.cfg.Policy.ManagementScope(ctx, cl.input)
	if err != nil {
		return manager{}, err
	}
	return manager{call: cl, scope: scope}, nil
}

// target loads the account id in the caller's management scope with the
// accounts above it: the account and its policy target. An id outside the
// scope is NOT_FOUND, exactly like a missing one.
func (s *Server) target(ctx context.Context, m manager, id int64) (storage.Account, *policy.TargetInput, error) {
	a, up, whole, err := s.cfg.Store.ManagedAccount(ctx, m.scope, id)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Account{}, nil, newError(CodeNotFound, fmt.Sprintf("account %d not found", id), nil)
	}
	if err != nil {
		return storage.Account{}, nil, err
	}
	return a, policy.NewTargetInput(a.Tenancy(), up, whole, s.cfg.Now().UTC()), nil
}

// decideManagement asks the management decision for action on target
// with change; a denial is 403 MANAGEMENT_DENIED with details.reason.
func (s *Server) decideManagement(ctx context.Context, m manager, action string, target *policy.TargetInput, change map[string]any) error {
	return s.decideManagementQuotas(ctx, m, action, target, change, nil)
}

// decideManagementQuotas is decideManagement with the caller's own quota
// limits in force (input.limits.quotas; nil: absent), for an account.update that
// sets quotas (docs/design.md §12).
func (s *Server) decideManagementQuotas(ctx context.Context, m manager, action string, target *policy.TargetInput, change map[string]any, quotas map[string]*int64) error {
	in := policy.NewManagementInput(m.principal, s.cfg.Now().UTC(), s.cfg.RateLimit)
	in.Action, in.Target, in.Change, in.Limits.Quotas = action, target, change, quotas
	d, err := s.cfg.Policy.DecideManagement(ctx, in)
	if err != nil {
		return err
	}
	if !d.Allow {
		if d.Code != CodeManagementDenied {
			return fmt.Errorf("management decision: a denial with code %q", d.Code)
		}
		return decisionError(d)
	}
	return nil
}

// actor is the audit trail's record of who makes a write.
func actor(ctx context.Context, m manager) storage.Actor {
	a := storage.Actor{AccountID: m.principal.Account.ID, TokenID: m.principal.Token.ID, RequestID: requestIDFrom(ctx)}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		a.TraceID = sc.TraceID().String()
	}
	return a
}

// managedListRoute registers GET path, a list under the caller's
// management scope (GET /accounts, /tokens, /audit-events: docs/design.md §9): the
// list of listRoute with the management scope in place of a row scope.
// adjust, when not nil, refines the parsed request (defaults, enum
// filters) from the raw query; opts are the operation's own options.
func managedListRoute[T any](g *fuego.Server, s *Server, path string, m storage.Model[T], adjust func(raw string, req *storage.ListRequest) error, opts []fuego.RouteOption) {
	scope := func(ctx context.Context) (policy.Scope, error) {
		caller, err := s.managerFrom(ctx)
		return caller.scope, err
	}
	fuego.Get(g, path, listHandler(s, path, m, same[T], adjust, scope), routeOptions(authErrors(), listParams(m.Descriptor, path), opts)...)
}

// enumFilter refuses an exact-match filter on field whose value is not one
// of values (INVALID_PARAMETER naming the field, with reason).
func enumFilter(req storage.ListRequest, field string, values []string, reason string) error {
	for _, f := range req.Filters {
		if v, ok := f.Value.(string); ok && f.Field.Name == field && !slices.Contains(values, v) {
			return invalidParam(field, reason)
		}
	}
	return nil
}
