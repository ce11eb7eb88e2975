package api_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/ratelimit"
)

func TestRateLimitPerToken(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 5 })
	tok := demoToken(t, "acme-all")
	for i := range 5 {
		res := a.get("/api/v2/me", tok)
		if res.status != 200 {
			t.Fatalf("request %d: %d %s", i, res.status, res.raw)
		}
		if res.header.Get("RateLimit-Limit") != "5" || res.header.Get("RateLimit-Remaining") != strconv.Itoa(4-i) {
			t.Fatalf("request %d headers: limit %q remaining %q", i, res.header.Get("RateLimit-Limit"), res.header.Get("RateLimit-Remaining"))
		}
		if reset, err := strconv.Atoi(res.header.Get("RateLimit-Reset")); err != nil || reset < 1 || reset > 60 {
			t.Fatalf("RateLimit-Reset %q", res.header.Get("RateLimit-Reset"))
		}
	}
	res := a.get("/api/v2/services", tok)
	if res.status != http.StatusTooManyRequests || res.errorCode(t) != "RATE_LIMITED" {
		t.Fatalf("sixth request: %d %s", res.status, res.raw)
	}
	if ra, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || ra < 1 || ra > 13 {
		t.Fatalf("Retry-After %q", res.header.Get("Retry-After"))
	}
	if res.header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("RateLimit-Remaining %q on the 429", res.header.Get("RateLimit-Remaining"))
	}
	// Another token of the same account has its own budget.
	if res := a.get("/api/v2/me", demoToken(t, "acme-services-only")); res.status != 200 {
		t.Fatalf("other token: %d", res.status)
	}
	// A token's own rate_limit wins over the default: acme-ratelimited has 5 too,
	// and a fresh server's default is larger.
	b := newTestAPI(t)
	for i := range 6 {
		res := b.get("/api/v2/me", demoToken(t, "acme-ratelimited"))
		want := 200
		if i == 5 {
			want = 429
		}
		if res.status != want || res.header.Get("RateLimit-Limit") != "5" {
			t.Fatalf("token limit, request %d: %d limit %q", i, res.status, res.header.Get("RateLimit-Limit"))
		}
	}
}

// TestAccountStateBeforeRateLimit: a token of an inactive account gets its
// 401 even when its budget is spent, as docs/design.md §4 orders 401 before 429.
func TestAccountStateBeforeRateLimit(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1 })
	for i := range 3 {
		res := a.get("/api/v2/me", demoToken(t, "hooli-all"))
		if res.status != 401 || res.errorCode(t) != "ACCOUNT_INACTIVE" {
			t.Fatalf("request %d: %d %s", i, res.status, res.raw)
		}
	}
}

func TestRateLimitFailedAuthentication(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.AuthFailureLimit = 3 })
	bad := "Bearer flt_" + strings.Repeat("B", 32)
	for i := range 3 {
		if res := a.do("GET", "/api/v2/me", nil, "Authorization", bad); res.status != 401 {
			t.Fatalf("attempt %d: %d", i, res.status)
		}
	}
	for _, h := range []string{bad, "Bearer " + demoToken(t, "acme-all")} {
		res := a.do("GET", "/api/v2/me", nil, "Authorization", h)
		if res.status != http.StatusTooManyRequests || res.errorCode(t) != "RATE_LIMITED" || res.header.Get("Retry-After") == "" {
			t.Fatalf("after 3 failures: %d %s", res.status, res.raw)
		}
	}
	// Another address is not affected.
	req := httptestRequest("GET", "/api/v2/me", "Bearer "+demoToken(t, "acme-all"), "198.51.100.7:5555")
	if status := a.serve(req); status != 200 {
		t.Fatalf("another address: %d", status)
	}
}

// TestTrustedProxies: behind a trusted proxy the failed-authentication
// budget belongs to the client named by X-Forwarded-For, not the proxy.
func TestTrustedProxies(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) {
		c.AuthFailureLimit = 2
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	bad := "Bearer flt_" + strings.Repeat("C", 32)
	via := func(xff, auth string) int {
		req := httptestRequest("GET", "/api/v2/me", auth, "10.0.0.5:4000")
		req.Header.Set("X-Forwarded-For", xff)
		return a.serve(req)
	}
	for range 2 {
		if st := via("203.0.113.9, 10.0.0.7", bad); st != 401 {
			t.Fatalf("attacker: %d", st)
		}
	}
	if st := via("203.0.113.9", bad); st != 429 {
		t.Fatalf("attacker after its budget: %d", st)
	}
	// Another client behind the same proxy is not locked out.
	if st := via("198.51.100.20", "Bearer "+demoToken(t, "acme-all")); st != 200 {
		t.Fatalf("other client behind the proxy: %d", st)
	}
	// A client cannot pick its address by sending X-Forwarded-For itself.
	req := httptestRequest("GET", "/api/v2/me", bad, "192.0.2.50:4000")
	req.Header.Set("X-Forwarded-For", "198.51.100.77")
	for range 2 {
		a.serve(req.Clone(req.Context()))
	}
	req = httptestRequest("GET", "/api/v2/me", "Bearer "+demoToken(t, "acme-all"), "192.0.2.50:4000")
	req.Header.Set("X-Forwarded-For", "198.51.100.78")
	if st := a.serve(req); st != 429 {
		t.Fatalf("untrusted peer with a forged header: %d, want 429 (its own budget is spent)", st)
	}
}

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	c, err := ratelimit.NewRedisClient("redis://127.0.0.1:6379/0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		if isCI() {
			t.Fatalf("CI=true and no Redis on 127.0.0.1:6379: %v", err)
		}
		t.Skipf("no Redis: %v", err)
	}
	return c
}

// TestRateLimitSharedAcrossReplicas runs two API replicas on one database
// and one Redis: a token's budget is spent across both.
func TestRateLimitSharedAcrossReplicas(t *testing.T) {
	client := redisClient(t)
	// Token ids repeat between test databases: start from a clean budget.
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 4 })
	keys, _ := client.Keys(context.Background(), "rate:token:*").Result()
	if len(keys) > 0 {
		client.Del(context.Background(), keys...)
	}
	r1 := newReplica(t, a, ratelimit.NewRedis(client, ratelimit.NewLocal(), nil), 4)
	r2 := newReplica(t, a, ratelimit.NewRedis(client, ratelimit.NewLocal(), nil), 4)
	tok := demoToken(t, "globex-read")
	for i := range 4 {
		r := r1
		if i%2 == 1 {
			r = r2
		}
		if res := r.get("/api/v2/me", tok); res.status != 200 || res.header.Get("RateLimit-Remaining") != strconv.Itoa(3-i) {
			t.Fatalf("request %d: %d remaining %q", i, res.status, res.header.Get("RateLimit-Remaining"))
		}
	}
	for _, r := range []*testAPI{r1, r2} {
		if res := r.get("/api/v2/me", tok); res.status != 429 {
			t.Fatalf("over the shared budget: %d", res.status)
		}
	}
}

// TestRateLimitRedisOutage: with Redis unreachable, requests are still
// served, limited per replica.
func TestRateLimitRedisOutage(t *testing.T) {
	client, err := ratelimit.NewRedisClient("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	base := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 3 })
	r := newReplica(t, base, ratelimit.NewRedis(client, ratelimit.NewLocal(), nil), 3)
	tok := demoToken(t, "acme-all")
	for i := range 3 {
		if res := r.get("/api/v2/me", tok); res.status != 200 || res.header.Get("RateLimit-Limit") != "3" {
			t.Fatalf("request %d during the outage: %d %s", i, res.status, res.raw)
		}
	}
	if res := r.get("/api/v2/me", tok); res.status != 429 {
		t.Fatalf("the fallback does not limit: %d", res.status)
	}
}

var _ = io.EOF
