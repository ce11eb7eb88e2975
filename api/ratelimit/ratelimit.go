// Package ratelimit counts requests against per-minute budgets: per API
// token, and per client address for failed authentication. Local keeps the
// budgets in process; Redis shares them between replicas and falls back to
// Local while Redis cannot be reached.
package ratelimit

import (
	"context"
	"time"
)

// Result is the state of one key's budget after a call.
type Result struct {
	// Allowed is true when the request fits in the budget.
	Allowed bool
	// Limit is the budget per minute (and the burst).
	Limit int
	// Remaining is how many requests the key may still make now.
	Remaining int
	// ResetAfter is how long until the budget is full again.
	ResetAfter time.Duration
	// RetryAfter is how long until the next request fits; 0 when allowed.
	RetryAfter time.Duration
	// Degraded is true when a shared limiter answered from its local
	// fallback.
	Degraded bool
}

// Limiter counts requests against per-minute budgets. A budget of limit
// requests per minute allows bursts of up to limit requests.
type Limiter interface {
	// AllowN takes n requests from key's budget; n = 0 only looks.
	AllowN(ctx context.Context, key string, limit, n int) (Result, error)
}
