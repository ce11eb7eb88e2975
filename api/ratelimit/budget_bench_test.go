package ratelimit

import (
	"context"
	"math"
	"testing"
)

// BenchmarkAllowAll is the limiter's part of a request's cost with the
// token's budget alone and with the account's budget beside it
// (docs/design.md §12), in memory and through Redis (one script call for
// both budgets): the difference is what an account rate limit adds to a
// request (docs/performance.md).
func BenchmarkAllowAll(b *testing.B) {
	for _, store := range []string{"local", "redis"} {
		for _, n := range []int{1, 2} {
			name := store + map[int]string{1: "/token", 2: "/token+account"}[n]
			b.Run(name, func(b *testing.B) {
				var l Limiter = NewLocal()
				if store == "redis" {
					l = newRedis(b)
				}
				budgets := []Budget{{Key: randomKey(), Limit: math.MaxInt32}, {Key: randomKey(), Limit: math.MaxInt32}}[:n]
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if r, err := l.AllowAll(ctx, budgets, 1); err != nil || !r.Allowed {
						b.Fatalf("%+v %v", r, err)
					}
				}
			})
		}
	}
}
