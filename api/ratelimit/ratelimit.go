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
	// Budget is, for AllowAll, the index in its budgets of the budget the
	// Result describes (the one that refused, else the tightest); 0 for
	// AllowN.
	Budget int
}

// Budget is one per-minute budget a request counts against: a key
// ("token:12") and its limit in requests per minute.
type Budget struct {
	Key   string
	Limit int
}

// Limiter counts requests against per-minute budgets. A budget of limit
// requests per minute allows bursts of up to limit requests.
type Limiter interface {
	// AllowN takes n requests from key's budget; n = 0 only looks.
	AllowN(ctx context.Context, key string, limit, n int) (Result, error)
	// AllowAll takes n (at least 1) requests from every budget, or from
	// none: the request fits only when it fits in each, decided
	// atomically, so that concurrent requests sharing a budget (tokens
	// minted from one token) cannot both pass on its last request. The
	// Result is the tightest budget's: the first that refuses, else the
	// one with the fewest requests remaining. A request of a minted token
	// counts against its own budget and every minter's (issue 19 item
	// 7); an account's budget is one more Budget.
	AllowAll(ctx context.Context, budgets []Budget, n int) (Result, error)
}
