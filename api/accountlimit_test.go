package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/ratelimit"
)

// stoppedLimiter is a local limiter whose clock does not move: no budget
// refills while a test runs, however slow.
func stoppedLimiter() *ratelimit.Local {
	stopped := time.Now()
	l := ratelimit.NewLocal()
	l.Now = func() time.Time { return stopped }
	return l
}

// setRateLimit sets account username's rate_limit through PATCH
// /accounts/{id} with the caller's token (rate "null" clears it) and
// checks the answer.
func (a *testAPI) setRateLimit(t *testing.T, caller, username, rate string) {
	t.Helper()
	r := a.send(http.MethodPatch, fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, username)), caller, `{"rate_limit":`+rate+`}`)
	want := rate
	if rate == "null" {
		want = "<nil>"
	}
	if r.status != http.StatusOK || fmt.Sprint(r.data(t)["rate_limit"]) != want {
		t.Fatalf("PATCH %s rate_limit %s: %d %s", username, rate, r.status, r.raw)
	}
}

// scopeOf returns a 429's details.scope, failing on any other answer.
func scopeOf(t *testing.T, r response) string {
	t.Helper()
	if r.status != http.StatusTooManyRequests || r.errorCode(t) != "RATE_LIMITED" || r.header.Get("Retry-After") == "" {
		t.Fatalf("want 429 RATE_LIMITED with Retry-After: %d %s", r.status, r.raw)
	}
	s, _ := r.body["error"].(map[string]any)["details"].(map[string]any)["scope"].(string)
	return s
}

// tenantTokens runs issue 21's experiment setup on a: a token of acme
// limited to 5 mints 4 children of 5 each, then acme's manager (fleetco)
// gives acme an account rate_limit of 5. It returns every token of the
// tenant: the family, acme's other demo token (the server default limit)
// and its subaccount acme-night's.
func tenantTokens(t *testing.T, a *testAPI) []string {
	t.Helper()
	parent := a.mintToken(t, "acme", "five", []string{"*"}, nil, 5)
	tokens := []string{parent}
	for i := range 4 {
		tokens = append(tokens, a.mint(t, parent, map[string]any{"name": fmt.Sprintf("child-%d", i), "permissions": []string{"*"}, "rate_limit": 5}).secret)
	}
	a.setRateLimit(t, demoToken(t, "fleetco-all"), "acme", "5")
	return append(tokens, demoToken(t, "acme-all"), demoToken(t, "acme-night-all"))
}

// serveRound sends rounds requests with each token in turn, spreading
// them over the replicas, and returns how many were served; every refusal
// must be a RATE_LIMITED 429.
func serveRound(t *testing.T, replicas []*testAPI, tokens []string, rounds int) (served int, scopes map[string]int) {
	t.Helper()
	scopes = map[string]int{}
	n := 0
	for range rounds {
		for _, tok := range tokens {
			r := replicas[n%len(replicas)].get("/api/v2/me", tok)
			n++
			if r.status == http.StatusOK {
				served++
				continue
			}
			scopes[scopeOf(t, r)]++
		}
	}
	return served, scopes
}

// refills is how many requests a budget of limit per minute may have
// regained since start: the experiments over Redis run on real time, so
// the bound allows for a slow machine instead of timing the test.
func refills(start time.Time, limit int) int {
	return int(time.Since(start).Minutes() * float64(limit))
}

// TestAccountRateLimitFiveChildren is issue 21's experiment (item 1): a
// token limited to 5 on an account whose rate_limit is 5 mints 4 children
// of 5; with every other token of the account and of its subaccount, the
// tenant is served 5 requests a minute, not 25 or more, and the refusals
// of tokens with room left name the account's budget.
func TestAccountRateLimitFiveChildren(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.Limiter = stoppedLimiter() })
	tokens := tenantTokens(t, a)
	served, scopes := serveRound(t, []*testAPI{a}, tokens, 5)
	if served != 5 {
		t.Fatalf("the tenant was served %d requests in a minute, want 5 (refusals %v)", served, scopes)
	}
	if scopes["account"] == 0 {
		t.Fatalf("no refusal named the account's budget: %v", scopes)
	}
	// another tenant is untouched
	if r := a.get("/api/v2/me", demoToken(t, "globex-read")); r.status != http.StatusOK {
		t.Fatalf("globex: %d", r.status)
	}
}

// clearBudgets deletes the Redis budgets of the accounts and tokens of a's
// database that a test uses: ids repeat between test databases.
func clearBudgets(t *testing.T, client *redis.Client, a *testAPI, tokens []string, usernames ...string) {
	t.Helper()
	var keys []string
	for _, u := range usernames {
		keys = append(keys, "rate:account:"+strconv.FormatInt(a.accountID(t, u), 10))
	}
	for _, tok := range tokens {
		keys = append(keys, "rate:token:"+strconv.FormatInt(a.tokenIDOf(t, tok), 10))
	}
	if err := client.Del(context.Background(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestAccountRateLimitAcrossReplicas: the experiment with two replicas
// sharing Redis serves the tenant 5 requests a minute in all; with Redis
// down, each replica falls back to its own budgets, 5 each.
func TestAccountRateLimitAcrossReplicas(t *testing.T) {
	client := redisClient(t)
	a := newTestAPI(t)
	tokens := tenantTokens(t, a)
	clearBudgets(t, client, a, tokens, "acme", "acme-night")
	start := time.Now()
	shared := []*testAPI{
		newReplica(t, a, ratelimit.NewRedis(client, ratelimit.NewLocal(), nil), api.DefaultRateLimit),
		newReplica(t, a, ratelimit.NewRedis(client, ratelimit.NewLocal(), nil), api.DefaultRateLimit),
	}
	served, scopes := serveRound(t, shared, tokens, 5)
	if served < 5 || served > 5+refills(start, 5) {
		t.Fatalf("two replicas over Redis served the tenant %d requests, want 5 (refusals %v)", served, scopes)
	}
	if scopes["account"] == 0 {
		t.Fatalf("no refusal named the account's budget: %v", scopes)
	}

	down, err := ratelimit.NewRedisClient("redis://127.0.0.1:1/0")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	start = time.Now()
	for i := range 2 {
		r := newReplica(t, a, ratelimit.NewRedis(down, ratelimit.NewLocal(), nil), api.DefaultRateLimit)
		served, scopes := serveRound(t, []*testAPI{r}, tokens, 5)
		if served < 5 || served > 5+refills(start, 5) {
			t.Fatalf("replica %d with Redis down served the tenant %d requests, want 5 (its own budget; refusals %v)", i, served, scopes)
		}
		if scopes["account"] == 0 {
			t.Fatalf("replica %d: no refusal named the account's budget: %v", i, scopes)
		}
	}
}

// TestAccountRateLimitHeaders: RateLimit-* describe the tighter of the
// token's and the account's budgets, and a 429 names the one that
// refused (details.scope): the account's under a roomy token, the token's
// under a roomy account; a subaccount's requests spend its own budget and
// its parent user's.
func TestAccountRateLimitHeaders(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.Limiter = stoppedLimiter() })
	fleetco, acme := demoToken(t, "fleetco-all"), demoToken(t, "acme-all")
	a.setRateLimit(t, fleetco, "acme", "3")
	for i := range 3 {
		r := a.get("/api/v2/me", acme)
		if r.status != http.StatusOK || r.header.Get("RateLimit-Limit") != "3" || r.header.Get("RateLimit-Remaining") != strconv.Itoa(2-i) ||
			r.header.Get("RateLimit-Reset") == "" {
			t.Fatalf("request %d under an account limit of 3: %d %v", i, r.status, r.header)
		}
	}
	r := a.get("/api/v2/me", acme)
	if scopeOf(t, r) != "account" || r.header.Get("RateLimit-Limit") != "3" || r.header.Get("RateLimit-Remaining") != "0" {
		t.Fatalf("over the account's budget: %s %v", r.raw, r.header)
	}
	if d := r.body["error"].(map[string]any); d["message"] != "the account's rate limit is exhausted" || d["details"].(map[string]any)["limit"] != 3.0 {
		t.Fatalf("429 %s", r.raw)
	}
	// the subaccount's tokens share the parent's budget
	if r := a.get("/api/v2/me", demoToken(t, "acme-night-all")); scopeOf(t, r) != "account" {
		t.Fatalf("the subaccount under an exhausted parent: %s", r.raw)
	}

	// a token narrower than its account: the token's budget is reported
	// and refuses
	a.setRateLimit(t, fleetco, "globex", "10")
	narrow := a.mintToken(t, "globex", "narrow", []string{"*"}, nil, 2)
	for range 2 {
		if r := a.get("/api/v2/me", narrow); r.status != http.StatusOK || r.header.Get("RateLimit-Limit") != "2" {
			t.Fatalf("a token of 2 under an account of 10: %d %v", r.status, r.header)
		}
	}
	if r := a.get("/api/v2/me", narrow); scopeOf(t, r) != "token" || r.body["error"].(map[string]any)["message"] != "the token's rate limit is exhausted" {
		t.Fatalf("over the token's budget: %s", r.raw)
	}
	// the account has 8 left: its other token is served and reports them
	if r := a.get("/api/v2/me", demoToken(t, "globex-read")); r.status != http.StatusOK || r.header.Get("RateLimit-Remaining") != "7" {
		t.Fatalf("globex's other token: %d %v", r.status, r.header)
	}

	// a subaccount's own limit, set by its user, binds its tokens alone
	globex := a.mintToken(t, "globex", "all", []string{"*"}, nil, 0)
	a.setRateLimit(t, globex, "globex-day", "1")
	day := demoToken(t, "globex-day-all")
	if r := a.get("/api/v2/me", day); r.status != http.StatusOK || r.header.Get("RateLimit-Limit") != "1" {
		t.Fatalf("the subaccount's first request: %d %v", r.status, r.header)
	}
	if r := a.get("/api/v2/me", day); scopeOf(t, r) != "account" {
		t.Fatalf("over the subaccount's own budget: %s", r.raw)
	}
	// globex spent: 2 (narrow) + 1 (globex-read) + 1 (the PATCH) + 1 (its subaccount's) of 10
	if r := a.get("/api/v2/me", globex); r.status != http.StatusOK || r.header.Get("RateLimit-Remaining") != "4" {
		t.Fatalf("the subaccount's parent: %d %v", r.status, r.header)
	}
}

// TestAccountRateLimitWhoSets (docs/design.md §12): a manager gives its users a
// limit and an admin its managers; nobody changes its own (own_account);
// a caller with a limit never sets a higher one, nor none
// (exceeds_account), and an account it creates without one inherits its
// limit; the change is audited and shown by GET /accounts/{id}; a bad
// value is 400.
func TestAccountRateLimitWhoSets(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.Limiter = stoppedLimiter() })
	admin, fleetco, acme := demoToken(t, "admin-all"), demoToken(t, "fleetco-all"), demoToken(t, "acme-all")
	path := func(u string) string { return fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, u)) }

	a.setRateLimit(t, fleetco, "acme", "600")
	if r := a.get(path("acme"), fleetco); r.status != http.StatusOK || r.data(t)["rate_limit"] != 600.0 {
		t.Fatalf("GET the account: %d %s", r.status, r.raw)
	}
	var changes string
	if err := a.db.NewRaw("SELECT changes::text FROM audit_events WHERE action = 'account.update' AND target_account_id = ? ORDER BY id DESC LIMIT 1",
		a.accountID(t, "acme")).Scan(context.Background(), &changes); err != nil || changes != `{"rate_limit": {"after": 600, "before": null}}` {
		t.Fatalf("audit: %s %v", changes, err)
	}
	denial(t, a.send(http.MethodPatch, path("acme"), acme, `{"rate_limit":1000}`), http.StatusForbidden, "MANAGEMENT_DENIED", "own_account")
	denial(t, a.send(http.MethodPatch, path("acme"), acme, `{"rate_limit":1}`), http.StatusForbidden, "MANAGEMENT_DENIED", "own_account")
	denial(t, a.send(http.MethodPatch, path("fleetco"), fleetco, `{"rate_limit":null}`), http.StatusForbidden, "MANAGEMENT_DENIED", "own_account")
	// a user sets its subaccount's limit, not above its own
	a.setRateLimit(t, acme, "acme-night", "600")
	denial(t, a.send(http.MethodPatch, path("acme-night"), acme, `{"rate_limit":601}`), http.StatusForbidden, "MANAGEMENT_DENIED", "exceeds_account")
	denial(t, a.send(http.MethodPatch, path("acme-night"), acme, `{"rate_limit":null}`), http.StatusForbidden, "MANAGEMENT_DENIED", "exceeds_account")

	// the admin limits the manager; the manager then stays within it
	a.setRateLimit(t, admin, "fleetco", "100")
	r := a.send(http.MethodPatch, path("globex"), fleetco, `{"rate_limit":101}`)
	denial(t, r, http.StatusForbidden, "MANAGEMENT_DENIED", "exceeds_account")
	if d := r.body["error"].(map[string]any)["details"].(map[string]any); d["limit"] != 100.0 || d["field"] != "rate_limit" {
		t.Fatalf("details %v", d)
	}
	denial(t, a.send(http.MethodPatch, path("globex"), fleetco, `{"rate_limit":null}`), http.StatusForbidden, "MANAGEMENT_DENIED", "exceeds_account")
	a.setRateLimit(t, fleetco, "globex", "100")
	denial(t, a.send(http.MethodPost, "/api/v2/accounts", fleetco, `{"username":"wide","type":"user","manager_id":`+
		strconv.FormatInt(a.accountID(t, "fleetco"), 10)+`,"rate_limit":500}`), http.StatusForbidden, "MANAGEMENT_DENIED", "exceeds_account")
	r = a.send(http.MethodPost, "/api/v2/accounts", fleetco, `{"username":"inherits","type":"user","manager_id":`+
		strconv.FormatInt(a.accountID(t, "fleetco"), 10)+`}`)
	if r.status != http.StatusCreated || r.data(t)["rate_limit"] != 100.0 {
		t.Fatalf("a user created by a manager limited to 100: %d %s", r.status, r.raw)
	}
	r = a.send(http.MethodPost, "/api/v2/accounts", fleetco, `{"username":"narrower","type":"user","manager_id":`+
		strconv.FormatInt(a.accountID(t, "fleetco"), 10)+`,"rate_limit":30}`)
	if r.status != http.StatusCreated || r.data(t)["rate_limit"] != 30.0 {
		t.Fatalf("a user created with 30: %d %s", r.status, r.raw)
	}
	// an unlimited caller creates an account without a limit
	r = a.send(http.MethodPost, "/api/v2/accounts", admin, `{"username":"free","type":"user"}`)
	if r.status != http.StatusCreated || r.data(t)["rate_limit"] != nil {
		t.Fatalf("a user created by the admin: %d %s", r.status, r.raw)
	}
	// the admin clears the manager's limit
	a.setRateLimit(t, admin, "fleetco", "null")

	for _, body := range []string{`{"rate_limit":0}`, `{"rate_limit":-5}`, `{"rate_limit":1000001}`} {
		r := a.send(http.MethodPatch, path("globex"), fleetco, body)
		if r.status != http.StatusBadRequest || r.errorCode(t) != "VALIDATION_FAILED" {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
	}
	for _, body := range []string{`{"rate_limit":"5"}`, `{"rate_limit":1.5}`} {
		if r := a.send(http.MethodPatch, path("globex"), fleetco, body); r.status != http.StatusBadRequest || r.errorCode(t) != "INVALID_BODY" {
			t.Fatalf("%s: %d %s", body, r.status, r.raw)
		}
	}
}
