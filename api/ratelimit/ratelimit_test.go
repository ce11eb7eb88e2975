package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLocalBudget(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLocal()
	l.Now = c.now
	for i := range 3 {
		r, _ := l.AllowN(ctx, "tok", 3, 1)
		if !r.Allowed || r.Remaining != 2-i || r.Limit != 3 {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	r, _ := l.AllowN(ctx, "tok", 3, 1)
	if r.Allowed || r.Remaining != 0 || r.RetryAfter <= 0 || r.RetryAfter > 20*time.Second {
		t.Fatalf("over the budget: %+v", r)
	}
	if r.ResetAfter < 59*time.Second || r.ResetAfter > time.Minute {
		t.Fatalf("reset after %v, want about a minute", r.ResetAfter)
	}
	if other, _ := l.AllowN(ctx, "other", 3, 1); !other.Allowed {
		t.Fatal("keys share a budget")
	}
	c.t = c.t.Add(20 * time.Second) // one request refills
	if peek, _ := l.AllowN(ctx, "tok", 3, 0); !peek.Allowed || peek.Remaining != 1 {
		t.Fatalf("peek after refill: %+v", peek)
	}
	if peek, _ := l.AllowN(ctx, "tok", 3, 0); peek.Remaining != 1 {
		t.Fatalf("a peek consumed the budget: %+v", peek)
	}
	if r, _ := l.AllowN(ctx, "tok", 3, 1); !r.Allowed {
		t.Fatalf("after refill: %+v", r)
	}
	if r, _ := l.AllowN(ctx, "tok", 10, 1); !r.Allowed || r.Limit != 10 {
		t.Fatalf("a changed limit takes effect: %+v", r)
	}
}

func TestLocalSweepKeepsActiveKeys(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := NewLocal()
	l.Now = c.now
	l.AllowN(ctx, "busy", 1, 1)
	for i := range sweepEvery {
		l.AllowN(ctx, "idle-"+string(rune('a'+i%26)), 1000, 0)
	}
	if _, ok := l.buckets["busy"]; !ok {
		t.Fatal("an exhausted bucket was swept")
	}
	if len(l.buckets) > 3 {
		t.Fatalf("%d buckets kept, idle ones should be swept", len(l.buckets))
	}
}

func redisAddr() string {
	if a := os.Getenv("FLEET_TEST_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

func newRedis(t *testing.T) *Redis {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: redisAddr()})
	t.Cleanup(func() { client.Close() })
	if err := client.Ping(context.Background()).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no Redis at %s: %v", redisAddr(), err)
		}
		t.Skipf("no Redis at %s: %v", redisAddr(), err)
	}
	return NewRedis(client, NewLocal(), nil)
}

func randomKey() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "test:" + hex.EncodeToString(b)
}

func TestRedisSharedBudget(t *testing.T) {
	ctx := context.Background()
	a, b := newRedis(t), newRedis(t) // two replicas, one Redis
	key := randomKey()
	for i := range 4 {
		l := a
		if i%2 == 1 {
			l = b
		}
		r, err := l.AllowN(ctx, key, 4, 1)
		if err != nil || !r.Allowed || r.Degraded || r.Remaining != 3-i {
			t.Fatalf("request %d: %+v %v", i, r, err)
		}
	}
	r, _ := b.AllowN(ctx, key, 4, 1)
	if r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("the fifth request across replicas: %+v", r)
	}
	if peek, _ := a.AllowN(ctx, key, 4, 0); peek.Allowed {
		t.Fatalf("peek on an exhausted key: %+v", peek)
	}
}

func TestRedisOutageFallsBack(t *testing.T) {
	ctx := context.Background()
	client, err := NewRedisClient("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	fallbacks := 0
	l := NewRedis(client, NewLocal(), nil)
	l.OnFallback = func() { fallbacks++ }
	for i := range 2 {
		r, err := l.AllowN(ctx, "k", 2, 1)
		if err != nil || !r.Allowed || !r.Degraded {
			t.Fatalf("request %d: %+v %v", i, r, err)
		}
	}
	if r, _ := l.AllowN(ctx, "k", 2, 1); r.Allowed {
		t.Fatalf("the local fallback does not limit: %+v", r)
	}
	if fallbacks != 3 {
		t.Fatalf("%d fallbacks counted", fallbacks)
	}
}
