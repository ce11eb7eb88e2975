package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
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
	rdb      *redis.Client
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
	return &Redis{rdb: client, lim: redis_rate.NewLimiter(client), fallback: fallback, log: log}
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

// allowAll is redis_rate's GCRA script (the same keys, "rate:" + key, and
// the same stored theoretical arrival times, so that AllowN and AllowAll
// share a key's budget) over several keys at once: every key is checked
// first, and only when each admits the cost are all of them charged. One
// script is atomic in Redis. ARGV: cost, period in seconds, then each
// key's limit (its rate per period and its burst). It returns {allowed,
// index of the tightest key (1-based), remaining, retry_after,
// reset_after}.
var allowAll = redis.NewScript(`
redis.replicate_commands()
local cost = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)
local new_tats = {}
local tightest, tightest_remaining, tightest_reset = 0, nil, 0
for i = 1, #KEYS do
  local rate = tonumber(ARGV[2 + i])
  local emission_interval = period / rate
  local increment = emission_interval * cost
  local burst_offset = emission_interval * rate
  local tat = redis.call("GET", KEYS[i])
  if not tat then
    tat = now
  else
    tat = tonumber(tat)
  end
  tat = math.max(tat, now)
  local new_tat = tat + increment
  local diff = now - (new_tat - burst_offset)
  local remaining = diff / emission_interval
  if remaining < 0 then
    return {0, i, 0, tostring(diff * -1), tostring(tat - now)}
  end
  new_tats[i] = new_tat
  if tightest_remaining == nil or remaining < tightest_remaining then
    tightest, tightest_remaining, tightest_reset = i, remaining, new_tat - now
  end
end
for i = 1, #KEYS do
  local reset_after = new_tats[i] - now
  if reset_after > 0 then
    redis.call("SET", KEYS[i], new_tats[i], "EX", math.ceil(reset_after))
  end
end
return {1, tightest, math.floor(tightest_remaining), "-1", tostring(tightest_reset)}
`)

// AllowAll implements Limiter: one atomic script over every budget's key
// (allowAll). Like AllowN, it answers from the local fallback (Degraded)
// while Redis cannot be reached.
func (r *Redis) AllowAll(ctx context.Context, budgets []Budget, n int) (Result, error) {
	if len(budgets) == 0 {
		return Result{Allowed: true}, nil
	}
	if time.Now().UnixNano() < r.downUntil.Load() {
		return r.fallbackAllowAll(ctx, budgets, n)
	}
	keys := make([]string, len(budgets))
	args := []any{n, time.Minute.Seconds()}
	for i, b := range budgets {
		keys[i] = "rate:" + b.Key
		args = append(args, b.Limit)
	}
	v, err := allowAll.Run(ctx, r.rdb, keys, args...).Slice()
	if err == nil && len(v) != 5 {
		err = fmt.Errorf("ratelimit: the script answered %d values", len(v))
	}
	var res Result
	if err == nil {
		res, err = allowAllResult(v, budgets)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		r.downUntil.Store(time.Now().Add(RetryInterval).UnixNano())
		r.logOutage(ctx, err)
		return r.fallbackAllowAll(ctx, budgets, n)
	}
	return res, nil
}

// allowAllResult reads the answer of allowAll.
func allowAllResult(v []any, budgets []Budget) (Result, error) {
	allowed, _ := v[0].(int64)
	i, _ := v[1].(int64)
	remaining, _ := v[2].(int64)
	retry, err1 := strconv.ParseFloat(fmt.Sprint(v[3]), 64)
	reset, err2 := strconv.ParseFloat(fmt.Sprint(v[4]), 64)
	if i < 1 || int(i) > len(budgets) || err1 != nil || err2 != nil {
		return Result{}, fmt.Errorf("ratelimit: malformed script answer %v", v)
	}
	limit := budgets[i-1].Limit
	out := Result{Allowed: allowed == 1, Limit: limit, Remaining: int(remaining), ResetAfter: max(seconds(reset), 0), Budget: int(i - 1)}
	if !out.Allowed {
		out.RetryAfter = seconds(retry)
		if out.RetryAfter == 0 {
			out.RetryAfter = time.Duration(float64(time.Minute) / float64(limit))
		}
	}
	return out, nil
}

func (r *Redis) fallbackAllowAll(ctx context.Context, budgets []Budget, n int) (Result, error) {
	if r.OnFallback != nil {
		r.OnFallback()
	}
	out, _ := r.fallback.AllowAll(ctx, budgets, n)
	out.Degraded = true
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
