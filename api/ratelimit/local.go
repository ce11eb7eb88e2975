package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sweepEvery is how many calls pass between sweeps of idle buckets.
const sweepEvery = 4096

// Local is an in-process Limiter: one token bucket (golang.org/x/time/rate)
// per key, refilled at limit per minute with a burst of limit. Buckets that
// are full again are dropped from time to time, so memory follows the
// number of recently active keys.
type Local struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	calls   int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

type bucket struct {
	limit int
	lim   *rate.Limiter
}

// NewLocal returns an empty in-process limiter.
func NewLocal() *Local {
	return &Local{buckets: map[string]*bucket{}}
}

// AllowN implements Limiter. It never fails.
func (l *Local) AllowN(_ context.Context, key string, limit, n int) (Result, error) {
	now := l.lock()
	defer l.mu.Unlock()
	b := l.bucket(key, limit)
	allowed := true
	if n > 0 {
		allowed = b.lim.AllowN(now, n)
	} else {
		allowed = b.lim.TokensAt(now) >= 1
	}
	return result(b, now, allowed), nil
}

// AllowAll implements Limiter. It never fails.
func (l *Local) AllowAll(_ context.Context, budgets []Budget, n int) (Result, error) {
	now := l.lock()
	defer l.mu.Unlock()
	if len(budgets) == 0 {
		return Result{Allowed: true}, nil
	}
	buckets := make([]*bucket, len(budgets))
	for i, bg := range budgets {
		b := l.bucket(bg.Key, bg.Limit)
		buckets[i] = b
		if b.lim.TokensAt(now) < float64(n) {
			r := result(b, now, false)
			r.Budget = i
			return r, nil
		}
	}
	var tightest Result
	for i, b := range buckets {
		b.lim.AllowN(now, n) // fits: checked above under the same lock
		if r := result(b, now, true); i == 0 || r.Remaining < tightest.Remaining {
			tightest = r
			tightest.Budget = i
		}
	}
	return tightest, nil
}

// lock takes l's lock for one call, counts the call, sweeps every
// sweepEvery calls and returns the time of the call. The caller unlocks.
func (l *Local) lock() time.Time {
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	l.mu.Lock()
	l.calls++
	if l.calls%sweepEvery == 0 {
		l.sweep(now)
	}
	return now
}

// bucket returns key's bucket, made full when it is new or its limit
// changed. The caller holds l's lock.
func (l *Local) bucket(key string, limit int) *bucket {
	b := l.buckets[key]
	if b == nil || b.limit != limit {
		b = &bucket{limit: limit, lim: rate.NewLimiter(perMinute(limit), limit)}
		l.buckets[key] = b
	}
	return b
}

func perMinute(limit int) rate.Limit { return rate.Limit(float64(limit) / 60) }

func result(b *bucket, now time.Time, allowed bool) Result {
	tokens := b.lim.TokensAt(now)
	perSec := float64(b.limit) / 60
	res := Result{
		Allowed:    allowed,
		Limit:      b.limit,
		Remaining:  int(math.Max(0, math.Floor(tokens))),
		ResetAfter: seconds((float64(b.limit) - tokens) / perSec),
	}
	if !allowed {
		res.RetryAfter = seconds((1 - tokens) / perSec)
	}
	return res
}

func seconds(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// sweep drops buckets that have refilled completely: they hold no state.
func (l *Local) sweep(now time.Time) {
	for k, b := range l.buckets {
		if b.lim.TokensAt(now) >= float64(b.limit) {
			delete(l.buckets, k)
		}
	}
}
