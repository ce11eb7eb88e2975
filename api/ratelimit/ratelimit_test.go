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

func newRedis(t testing.TB) *Redis {
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

// allowAllCases runs the AllowAll contract against l: a parent budget of
// 5 shared by its own key and two children of 5 each (tokens minted from
// it) serves 5 requests in all, not 15; a refusal charges no budget; the
// result is the tightest budget's.
func allowAllCases(t *testing.T, l Limiter) {
	t.Helper()
	ctx := context.Background()
	parent, child1, child2, other := randomKey(), randomKey(), randomKey(), randomKey()
	served := 0
	for i := range 15 {
		kids := []Budget{{child1, 5}, {child2, 5}, {parent, 5}}
		b := []Budget{kids[i%3], {parent, 5}}
		if i%3 == 2 {
			b = []Budget{{parent, 5}}
		}
		r, err := l.AllowAll(ctx, b, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed {
			served++
		} else if r.Limit != 5 || r.RetryAfter <= 0 {
			t.Fatalf("refusal %+v", r)
		}
	}
	if served != 5 {
		t.Fatalf("the parent's budget of 5 served %d requests of it and its children", served)
	}
	// a refused request charged nothing: another budget beside the
	// exhausted parent is still full
	if r, _ := l.AllowAll(ctx, []Budget{{other, 3}}, 1); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("a fresh budget: %+v", r)
	}
	// the tightest budget answers: 2 left of 3 beside a fresh 100
	r, _ := l.AllowAll(ctx, []Budget{{randomKey(), 100}, {other, 3}}, 1)
	if !r.Allowed || r.Limit != 3 || r.Remaining != 1 || r.Budget != 1 {
		t.Fatalf("tightest: %+v", r)
	}
	// a child's own budget is charged too: exhausted on its own, it refuses
	// whatever its parent has left
	small, big := randomKey(), randomKey()
	for range 2 {
		if r, _ := l.AllowAll(ctx, []Budget{{small, 2}, {big, 100}}, 1); !r.Allowed {
			t.Fatalf("within the child's budget: %+v", r)
		}
	}
	if r, _ := l.AllowAll(ctx, []Budget{{small, 2}, {big, 100}}, 1); r.Allowed || r.Limit != 2 || r.Budget != 0 {
		t.Fatalf("over the child's own budget: %+v", r)
	}
	if r, _ := l.AllowN(ctx, big, 100, 0); r.Remaining != 98 {
		t.Fatalf("the refused request charged the parent: %+v", r)
	}
	// the refusing budget is named, wherever it stands in the list
	if r, _ := l.AllowAll(ctx, []Budget{{big, 100}, {small, 2}}, 1); r.Allowed || r.Budget != 1 || r.Limit != 2 {
		t.Fatalf("refused by the second budget: %+v", r)
	}
}

func TestLocalAllowAll(t *testing.T) { allowAllCases(t, NewLocal()) }

func TestRedisAllowAll(t *testing.T) {
	allowAllCases(t, newRedis(t))
	// AllowN and AllowAll share a key's budget across replicas
	ctx := context.Background()
	a, b := newRedis(t), newRedis(t)
	key := randomKey()
	if r, _ := a.AllowN(ctx, key, 2, 1); !r.Allowed {
		t.Fatal(r)
	}
	if r, _ := b.AllowAll(ctx, []Budget{{key, 2}}, 1); !r.Allowed || r.Remaining != 0 || r.Degraded {
		t.Fatalf("second request through AllowAll: %+v", r)
	}
	if r, _ := a.AllowN(ctx, key, 2, 1); r.Allowed {
		t.Fatalf("third request: %+v", r)
	}
}

func TestRedisAllowAllOutageFallsBack(t *testing.T) {
	client, err := NewRedisClient("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	l := NewRedis(client, NewLocal(), nil)
	r, err := l.AllowAll(context.Background(), []Budget{{"k", 1}, {"p", 1}}, 1)
	if err != nil || !r.Allowed || !r.Degraded {
		t.Fatalf("%+v %v", r, err)
	}
	if r, _ := l.AllowAll(context.Background(), []Budget{{"k2", 1}, {"p", 1}}, 1); r.Allowed || !r.Degraded {
		t.Fatalf("the fallback shares the parent's budget: %+v", r)
	}
}
