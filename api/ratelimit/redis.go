package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Redis is a Limiter shared by every replica that uses the same Redis
// (GCRA, github.com/go-redis/redis_rate). When Redis fails, it answers from
// its local fallback and marks the result Degraded: a Redis outage weakens
// the limits to per-replica ones, it does not take the API down.
type Redis struct {
	lim      *redis_rate.Limiter
	fallback *Local
	log      *slog.Logger
	// OnFallback, when set, is called for every answer given by the
	// fallback (for metrics).
	OnFallback func()
	lastLog    atomic.Int64
	// downUntil (unix nanoseconds) skips Redis for a while after a failure,
	// so that an outage costs one failed call per interval, not one per
	// request.
	downUntil atomic.Int64
}

// RetryInterval is how long the limiter stays on its fallback after Redis
// fails before it tries Redis again.
const RetryInterval = 2 * time.Second

// NewRedisClient returns a Redis client for the limiter from a redis:// URL,
// with short timeouts so that an outage is noticed quickly.
func NewRedisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	opt.DialTimeout = 250 * time.Millisecond
	opt.ReadTimeout = 250 * time.Millisecond
	opt.WriteTimeout = 250 * time.Millisecond
	opt.DialerRetries = 1
	opt.MaxRetries = 1
	return redis.NewClient(opt), nil
}

// NewRedis returns a shared limiter on client, falling back to fallback.
func NewRedis(client *redis.Client, fallback *Local, log *slog.Logger) *Redis {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Redis{lim: redis_rate.NewLimiter(client), fallback: fallback, log: log}
}

// AllowN implements Limiter.
func (r *Redis) AllowN(ctx context.Context, key string, limit, n int) (Result, error) {
	if time.Now().UnixNano() < r.downUntil.Load() {
		return r.fallbackAllowN(ctx, key, limit, n)
	}
	res, err := r.lim.AllowN(ctx, key, redis_rate.PerMinute(limit), n)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		r.downUntil.Store(time.Now().Add(RetryInterval).UnixNano())
		r.logOutage(ctx, err)
		return r.fallbackAllowN(ctx, key, limit, n)
	}
	out := Result{
		Allowed:    n == 0 && res.Remaining > 0 || n > 0 && res.Allowed >= n,
		Limit:      limit,
		Remaining:  res.Remaining,
		ResetAfter: max(res.ResetAfter, 0),
	}
	if !out.Allowed {
		out.RetryAfter = max(res.RetryAfter, 0)
		if out.RetryAfter == 0 {
			out.RetryAfter = time.Duration(float64(time.Minute) / float64(limit))
		}
	}
	return out, nil
}

func (r *Redis) fallbackAllowN(ctx context.Context, key string, limit, n int) (Result, error) {
	if r.OnFallback != nil {
		r.OnFallback()
	}
	out, _ := r.fallback.AllowN(ctx, key, limit, n)
	out.Degraded = true
	return out, nil
}

// logOutage logs a Redis failure at most every ten seconds.
func (r *Redis) logOutage(ctx context.Context, err error) {
	now := time.Now().Unix()
	last := r.lastLog.Load()
	if now-last < 10 || !r.lastLog.CompareAndSwap(last, now) {
		return
	}
	r.log.WarnContext(ctx, "rate limiter: Redis unavailable, using per-replica limits", slog.Any("error", err))
}
