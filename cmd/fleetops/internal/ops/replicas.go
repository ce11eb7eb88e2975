package ops

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicasRun: two replicas on one database and one Redis. Phase 1 drives
// a token with a small limit at both and checks that the sum of their 200s
// stays within one budget; phase 2 drives a high-limit token at both, sends
// SIGTERM to replica A mid-load and checks that nothing failed.
func replicasRun(fs *flag.FlagSet) func(context.Context, *env) error {
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "Redis shared by the two replicas")
	conc := fs.Int("concurrency", 16, "concurrent clients")
	limit := fs.Int("limit", 120, "rate limit (requests per minute) of the shared-limit token")
	window := fs.Duration("window", 15*time.Second, "length of the shared-limit phase")
	failover := fs.Duration("failover", 30*time.Second, "length of the failover phase")
	stopAt := fs.Duration("stop-at", 10*time.Second, "when, in the failover phase, replica A gets SIGTERM")
	maxRequests := fs.Int64("max-requests", 300_000, "upper bound on the requests of each phase")
	redisStep := fs.Duration("redis-outage", 10*time.Second, "phase 3: Redis up, down and back for this long each (0 skips the phase)")
	return func(ctx context.Context, e *env) error {
		if err := e.ensureRedis(ctx); err != nil {
			return err
		}
		dbURL, err := e.freshDatabase(ctx, "fleetapi_ops_replicas")
		if err != nil {
			return err
		}
		limited, err := e.createToken(ctx, dbURL, "acme", "ops-shared-limit", *limit)
		if err != nil {
			return err
		}
		bulk, err := e.createToken(ctx, dbURL, "fleetco", "ops-bulk", 10_000_000)
		if err != nil {
			return err
		}
		// Token ids restart in every fresh database, and Redis keys are
		// "rate:token:<id>": start the run's tokens from full budgets.
		rc, err := redisClient(*redisURL)
		if err != nil {
			return err
		}
		defer rc.Close()
		keys := []string{fmt.Sprintf("rate:token:%d", limited.ID), fmt.Sprintf("rate:token:%d", bulk.ID)}
		if err := rc.Del(ctx, keys...).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		vars := map[string]string{"FLEET_DATABASE_URL": dbURL, "FLEET_REDIS_URL": *redisURL}
		reps, err := e.startReplicas(ctx, vars, "replica-a", "replica-b")
		if err != nil {
			return err
		}
		a, b := reps[0], reps[1]
		c := &checks{e: e}
		sharedLimitPhase(ctx, e, c, reps, limited, *limit, *conc, *window, *maxRequests)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n, err := rc.Exists(ctx, keys[0]).Result(); err == nil {
			e.printf("  Redis holds the token's bucket: EXISTS %s = %d\n", keys[0], n)
		}
		failoverPhase(ctx, e, c, a, b, bulk, *conc, *failover, *stopAt, *maxRequests)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if *redisStep > 0 {
			tok, err := e.createToken(ctx, dbURL, "acme", "ops-redis-outage", *limit)
			if err != nil {
				return err
			}
			if err := redisOutagePhase(ctx, e, c, dbURL, tok, *limit, *conc, *redisStep); err != nil {
				return err
			}
		}
		return c.err()
	}
}

// redisClient connects to the Redis at url (--redis).
func redisClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	return redis.NewClient(opt), nil
}
