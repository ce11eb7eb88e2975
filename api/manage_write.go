package api

import (
	"context"
	"errors"
	"math"
	"net/http"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// managementWrite declares the opening of a management write with a JSON
// body (docs/design.md §9). open runs it in this order, the first failure ending
// the request: no query parameter (400 INVALID_PARAMETER), the strict body
// (400 INVALID_BODY, 413), its validation into the value written (400
// VALIDATION_FAILED), the calling manager with its management scope, the
// Idempotency-Key of a create (400 INVALID_PARAMETER) and the target
// account in the caller's management scope (404 outside, like a missing
// id). A handler declares only what differs; the decision and the write
// stay its own.
type managementWrite[In, V any] struct {
	// validate turns the decoded body and its text faults into the value
	// written.
	validate func(in In, faults textFaults) (V, error)
	// inherit, when not nil, completes the value from the caller (a
	// token's inherited limits) before the value is hashed for
	// idempotency.
	inherit func(m manager, v *V)
	// create names the create in the Idempotency-Key's request hash
	// ("POST /accounts"); empty: the write takes no Idempotency-Key.
	create string
	// account, when not nil, names the value's target account; a nil id
	// means the value has none (an account created at the top).
	account func(v V) *int64
}

// openedWrite is a management write after its opening.
type openedWrite[V any] struct {
	manager
	value V
	// idem is the create's Idempotency-Key; nil without one.
	idem *storage.IdempotentRequest
	// target is the target account's policy input; nil without one.
	target *policy.TargetInput
}

// open runs the opening of w on the request r (see managementWrite).
func (w managementWrite[In, V]) open(s *Server, ctx context.Context, r *http.Request) (openedWrite[V], error) {
	v, err := validBody(r, w.validate)
	if err != nil {
		return openedWrite[V]{}, err
	}
	m, err := s.managerFrom(ctx)
	if err != nil {
		return openedWrite[V]{}, err
	}
	if w.inherit != nil {
		w.inherit(m, &v)
	}
	o := openedWrite[V]{manager: m, value: v}
	if w.create != "" {
		if o.idem, err = idempotencyRequest(r, m.principal.Account.ID, w.create, v); err != nil {
			return openedWrite[V]{}, err
		}
	}
	if w.account != nil {
		if id := w.account(v); id != nil {
			if _, o.target, err = s.target(ctx, m, *id); err != nil {
				return openedWrite[V]{}, err
			}
		}
	}
	return o, nil
}

// validBody opens every write with a JSON body: no query parameter, the
// strict body (decodeBody), and validate's value from it.
func validBody[In, V any](r *http.Request, validate func(in In, faults textFaults) (V, error)) (V, error) {
	if err := noParams(r.URL.RawQuery); err != nil {
		var zero V
		return zero, err
	}
	in, faults, err := decodeBody[In](r.Body)
	if err != nil {
		var zero V
		return zero, err
	}
	return validate(in, faults)
}

// pathRequest is a fuego context: its path parameters and request.
type pathRequest interface {
	PathParam(name string) string
	Request() *http.Request
}

// idParam parses the path parameter id (1 or more).
func idParam(c pathRequest) (int64, error) {
	id, err := parseInt("id", c.PathParam("id"), 1, math.MaxInt64)
	if err != nil {
		return 0, err
	}
	return id, nil
}

// idParamOnly parses the path parameter id of a route that takes no query
// parameter.
func idParamOnly(c pathRequest) (int64, error) {
	id, err := idParam(c)
	if err != nil {
		return 0, err
	}
	return id, noParams(c.Request().URL.RawQuery)
}

// managedID opens a management route on one id that takes no query
// parameter and no body: the id and the calling manager.
func (s *Server) managedID(c fuego.ContextNoBody) (int64, manager, error) {
	id, err := idParamOnly(c)
	if err != nil {
		return 0, manager{}, err
	}
	m, err := s.managerFrom(c.Context())
	return id, m, err
}

// createdEnvelope answers a create: the value, with the header
// Idempotent-Replayed when it is the replay of an earlier request with the
// same Idempotency-Key.
func createdEnvelope[T any](c interface{ SetHeader(key, value string) }, v T, replayed bool) *Envelope[T] {
	if replayed {
		c.SetHeader("Idempotent-Replayed", "true")
	}
	return &Envelope[T]{Data: v}
}

// revocationRoute registers DELETE path on one id: a management write that
// takes away the right to authenticate (a revoked token, an erased
// account). It opens as managedID (no query parameter, no body, the
// calling manager), lets del do the write, and answers 204 without a body
// once every replica refuses what del ended (authChanged). del's
// storage.ErrNotFound is 404 "<what> not found". opts are the operation's
// own options.
func (s *Server) revocationRoute(g *fuego.Server, path, what string, del func(ctx context.Context, m manager, id int64) error, opts ...[]fuego.RouteOption) {
	handler := func(c fuego.ContextNoBody) (any, error) {
		ctx := c.Context()
		id, m, err := s.managedID(c)
		if err != nil {
			return nil, err
		}
		if err := del(ctx, m, id); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return nil, newError(CodeNotFound, what+" not found", nil)
			}
			return nil, err
		}
		s.authChanged(ctx)
		c.Response().Header().Del("Content-Type")
		return nil, nil
	}
	noContent := []fuego.RouteOption{fuego.OptionDefaultStatusCode(http.StatusNoContent), respondsNoContent()}
	fuego.Delete(g, path, handler, routeOptions(oneErrors(), routeOptions(opts...), noContent)...)
}
