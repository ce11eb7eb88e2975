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
// Config.TenantQueueTimeout, then is refused: 429 RATE_LIMITED with
// details.scope "tenant" when the tenant's own load is the cause, as with a
// rate limit; 503 SERVICE_UNAVAILABLE when the requests holding its slots
// are stuck (the oldest has run for stuckAfter or longer: the database or
// a lock is not answering, as during a fail-over), which is the server's
// trouble, not the tenant's. By default stuckAfter is the wait itself: a
// request refused after waiting the whole wait while no slot of its
// tenant was given back (every holder older than the wait) is a 503; one
// that lost the slots given back to others meanwhile is a 429.

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
	// stuckAfter is how long the oldest holder of a tenant's slots has
	// run when a refusal is the server's trouble (503), not the tenant's
	// load (429): Config.TenantStuckAfter.
	stuckAfter time.Duration
	mu         sync.Mutex
	// slots holds, per tenant with a request in flight or waiting, a
	// semaphore of limit places and the number of requests using it (the
	// entry goes when none does, so the map holds only active tenants).
	slots map[int64]*tenantSlots
}

type tenantSlots struct {
	sem  chan struct{}
	refs int
	// holders are the start times of the requests holding a slot, by a
	// number of their own (guarded by inFlight.mu).
	holders map[uint64]time.Time
	next    uint64
}

// stuck reports whether the oldest holder of ts started stuckAfter or
// more before now. Called with inFlight.mu held.
func (ts *tenantSlots) stuck(now time.Time, stuckAfter time.Duration) bool {
	for _, start := range ts.holders {
		if now.Sub(start) >= stuckAfter {
			return true
		}
	}
	return false
}

func newInFlight(limit int, wait, stuckAfter time.Duration) *inFlight {
	if wait <= 0 {
		wait = DefaultTenantQueueTimeout
	}
	if stuckAfter <= 0 {
		stuckAfter = wait
	}
	return &inFlight{limit: limit, wait: wait, stuckAfter: stuckAfter, slots: map[int64]*tenantSlots{}}
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
		ts = &tenantSlots{sem: make(chan struct{}, f.limit), holders: map[uint64]time.Time{}}
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
	hold := func() func() {
		f.mu.Lock()
		ts.next++
		id := ts.next
		ts.holders[id] = time.Now()
		f.mu.Unlock()
		return func() {
			f.mu.Lock()
			delete(ts.holders, id)
			f.mu.Unlock()
			<-ts.sem
			done()
		}
	}
	select {
	case ts.sem <- struct{}{}:
		return hold(), nil
	default:
	}
	timer := time.NewTimer(f.wait)
	defer timer.Stop()
	select {
	case ts.sem <- struct{}{}:
		return hold(), nil
	case <-timer.C:
		f.mu.Lock()
		stuck := ts.stuck(time.Now(), f.stuckAfter)
		f.mu.Unlock()
		done()
		if stuck {
			e := newError(CodeUnavailable, "the account's requests on this server are not being answered; retry later", nil)
			e.RetryAfter = 1
			return nil, e
		}
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
