package api

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/tenancy"
)

// A tenant's load never takes another tenant's connections (docs/decisions.md,
// "Requests in flight are bounded per tenant"): each server lets a tenant
// have at most Config.TenantMaxInFlight requests in its handlers at once,
// so at most that many of the server's database connections, whatever the
// tenant's requests wait for (a row lock its own writes hold, a slow
// statement). A request over the bound waits for a slot at most
// Config.TenantQueueTimeout, then is refused 429 RATE_LIMITED with
// details.scope "tenant": the tenant's own load is the cause, as with a
// rate limit, and the server is not unavailable.

// DefaultTenantQueueTimeout is how long a request over its tenant's bound
// waits for a slot when Config.TenantQueueTimeout is 0.
const DefaultTenantQueueTimeout = time.Second

// scopeTenant is a 429's details.scope for the tenant's requests in
// flight.
const scopeTenant = "tenant"

// tenantOf is the key of p's bound: the account a tenant cannot multiply.
// A customer (a user) creates subaccounts and tokens, so neither is a
// key: a subaccount's requests count as its parent user's, and every
// token of an account as the account's. Every other account is a tenant
// of its own: a manager (a reseller) apart from its users, whose traffic
// must not spend the reseller's budget nor a sibling's (a limit is a
// tenant boundary), and the operator's admin accounts.
func tenantOf(p tenancy.Principal) int64 {
	if p.Account.Type == tenancy.Subaccount && p.Account.ManagerID != 0 {
		return p.Account.ManagerID
	}
	return p.Account.ID
}

// inFlight bounds the requests in flight per tenant. A zero limit bounds
// nothing.
type inFlight struct {
	limit int
	wait  time.Duration
	mu    sync.Mutex
	// slots holds, per tenant with a request in flight or waiting, a
	// semaphore of limit places and the number of requests using it (the
	// entry goes when none does, so the map holds only active tenants).
	slots map[int64]*tenantSlots
}

type tenantSlots struct {
	sem  chan struct{}
	refs int
}

func newInFlight(limit int, wait time.Duration) *inFlight {
	if wait <= 0 {
		wait = DefaultTenantQueueTimeout
	}
	return &inFlight{limit: limit, wait: wait, slots: map[int64]*tenantSlots{}}
}

// acquire takes a slot of tenant, waiting at most f.wait (and no longer
// than ctx), and returns the function that gives it back. Without a slot
// it is a 429 RATE_LIMITED of scope "tenant", or ctx's error.
func (f *inFlight) acquire(ctx context.Context, tenant int64) (func(), error) {
	if f.limit <= 0 {
		return func() {}, nil
	}
	f.mu.Lock()
	ts := f.slots[tenant]
	if ts == nil {
		ts = &tenantSlots{sem: make(chan struct{}, f.limit)}
		f.slots[tenant] = ts
	}
	ts.refs++
	f.mu.Unlock()
	done := func() {
		f.mu.Lock()
		if ts.refs--; ts.refs == 0 {
			delete(f.slots, tenant)
		}
		f.mu.Unlock()
	}
	select {
	case ts.sem <- struct{}{}:
		return func() { <-ts.sem; done() }, nil
	default:
	}
	timer := time.NewTimer(f.wait)
	defer timer.Stop()
	select {
	case ts.sem <- struct{}{}:
		return func() { <-ts.sem; done() }, nil
	case <-timer.C:
		done()
		e := newError(CodeRateLimited, fmt.Sprintf("the account has %d requests in flight on this server, the most it may have", f.limit),
			map[string]any{"limit": f.limit, "scope": scopeTenant})
		e.RetryAfter = 1
		return nil, e
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// enterTenant takes a slot of p's tenant for the request (its span says
// which tenant, and a refusal is counted as a rate limit of kind
// in_flight).
func (s *Server) enterTenant(ctx context.Context, p tenancy.Principal) (func(), error) {
	tenant := tenantOf(p)
	release, err := s.inFlight.acquire(ctx, tenant)
	if err != nil {
		span := trace.SpanFromContext(ctx)
		span.SetAttributes(attribute.Int64("fleet.tenant", tenant))
		if e, ok := err.(*Error); ok && e.Code == CodeRateLimited {
			span.SetAttributes(attrErrorCode.String(CodeRateLimited), attribute.String("fleet.ratelimit.scope", scopeTenant))
			s.metrics.rateLimited(ctx, rejectInFlight)
		}
	}
	return release, err
}
