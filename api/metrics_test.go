package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/telemetry"
)

// meteredAPI is the test API over the production telemetry set-up
// (telemetry.Setup): its meter provider with its views, scraped through
// its Prometheus handler.
func meteredAPI(t *testing.T) (*testAPI, http.Handler) {
	t.Helper()
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	a := newTestAPIWith(t, func(c *api.Config) {
		c.MeterProvider = tel.Meter
		c.MetricsHandler = tel.MetricsHandler
		// The test sends thousands of requests from one address and one
		// token: neither budget is under test here.
		c.RateLimit = 1 << 30
		c.AuthFailureLimit = 1 << 30
	})
	return a, tel.MetricsHandler
}

// scrape returns the sample lines of the Prometheus exposition (one per
// series, histogram buckets included), sorted.
func scrape(t *testing.T, metrics http.Handler) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	var series []string
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ") // the series without its value
		if strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "go_sql_") {
			continue // the Go runtime's own gauges come and go with the GC cycle
		}
		series = append(series, name)
	}
	slices.Sort(series)
	return slices.Compact(series)
}

// requestKind is one kind of request a client can send; fixed gives the
// warm-up request, random one with client-chosen values in every place a
// client chooses them (host, path, method, query, headers).
type requestKind struct {
	name   string
	status int
	build  func(r *rand.Rand, fixed bool) *http.Request
}

func randWord(r *rand.Rand, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

func randHost(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return randWord(r, 12) + ".example"
	case 1:
		return fmt.Sprintf("%s.example:%d", randWord(r, 8), 1+r.IntN(65535))
	case 2:
		return fmt.Sprintf("[2001:db8::%x]:%d", r.IntN(65536), 1+r.IntN(65535))
	}
	return fmt.Sprintf("198.51.100.%d:%d", r.IntN(256), 1+r.IntN(65535))
}

func randQuery(r *rand.Rand) string {
	var q []string
	for range 1 + r.IntN(3) {
		q = append(q, "zz"+randWord(r, 6)+"="+randWord(r, 10))
	}
	return "?" + strings.Join(q, "&")
}

// TestMetricSeriesBounded sends thousands of requests of every kind with
// random hosts, paths, methods, query strings and headers, authenticated
// and not, and checks that they add no metric series to those of a
// warm-up with fixed values: nothing a client chooses becomes a label
// with unbounded values.
func TestMetricSeriesBounded(t *testing.T) {
	a, metrics := meteredAPI(t)
	tok := demoToken(t, "acme-all")
	pick := func(r *rand.Rand, fixed bool, fixedValue string, random func(*rand.Rand) string) string {
		if fixed {
			return fixedValue
		}
		return random(r)
	}
	req := func(r *rand.Rand, fixed bool, method, target, auth string) *http.Request {
		rq := httptest.NewRequest(method, target, nil)
		rq.Host = pick(r, fixed, "api.example", randHost)
		rq.Header.Set("User-Agent", pick(r, fixed, "probe/1", func(r *rand.Rand) string { return randWord(r, 20) }))
		rq.Header.Set("X-Request-Id", pick(r, fixed, "warm-up", func(r *rand.Rand) string { return randWord(r, 16) }))
		rq.Header.Set("X-Forwarded-For", pick(r, fixed, "203.0.113.1", func(r *rand.Rand) string {
			return fmt.Sprintf("203.0.113.%d", r.IntN(256))
		}))
		if auth != "" {
			rq.Header.Set("Authorization", auth)
		}
		return rq
	}
	unknownMethod := func(r *rand.Rand) string { return strings.ToUpper("X" + randWord(r, 7)) }
	kinds := []requestKind{
		{"authenticated, known route", 200, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, "/api/v2/me", "Bearer "+tok)
		}},
		{"authenticated, unknown query parameters", 400, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, "/api/v2/services"+pick(r, fixed, "?zzfixed=1", randQuery), "Bearer "+tok)
		}},
		{"authenticated, unknown id", 404, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, "/api/v2/events/"+pick(r, fixed, "999999999", func(r *rand.Rand) string {
				return fmt.Sprint(100000000 + r.IntN(900000000))
			}), "Bearer "+tok)
		}},
		{"unauthenticated, known route, random query", 401, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, "/api/v2/events"+pick(r, fixed, "?zzfixed=1", randQuery), "")
		}},
		{"invalid token", 401, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, "/api/v2/reports", "Bearer flt_"+pick(r, fixed, strings.Repeat("0", 32), func(r *rand.Rand) string { return randWord(r, 32) }))
		}},
		{"unknown path", 404, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, pick(r, fixed, "/api/v2/fixed", func(r *rand.Rand) string {
				return "/" + randWord(r, 10) + "/" + randWord(r, 10)
			})+pick(r, fixed, "", randQuery), "")
		}},
		{"unknown method, unknown path", 404, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, pick(r, fixed, "XFIXED", unknownMethod), "/api/v2/"+pick(r, fixed, "fixed", func(r *rand.Rand) string { return randWord(r, 12) }), "Bearer "+tok)
		}},
		{"unknown method, known path", 405, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, pick(r, fixed, "XFIXED", unknownMethod), "/api/v2/services", "Bearer "+tok)
		}},
		{"non-canonical path", 404, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, "/api/v2/"+pick(r, fixed, "x", func(r *rand.Rand) string { return randWord(r, 8) })+"/../events", "Bearer "+tok)
		}},
		{"operations endpoint", 200, func(r *rand.Rand, fixed bool) *http.Request {
			return req(r, fixed, http.MethodGet, "/healthz"+pick(r, fixed, "", randQuery), "")
		}},
	}
	send := func(k requestKind, rq *http.Request) {
		t.Helper()
		rec := httptest.NewRecorder()
		a.handler.ServeHTTP(rec, rq)
		if rec.Code != k.status {
			t.Fatalf("%s: %s %s (Host %s): status %d, want %d: %s", k.name, rq.Method, rq.URL, rq.Host, rec.Code, k.status, rec.Body.Bytes())
		}
	}
	rnd := rand.New(rand.NewPCG(10, 2))
	for range 2 { // twice: the second time from the policy cache
		for _, k := range kinds {
			send(k, k.build(rnd, true))
		}
	}
	warm := scrape(t, metrics)
	if len(warm) == 0 {
		t.Fatal("no series after the warm-up")
	}
	const n = 3000
	for i := range n {
		k := kinds[i%len(kinds)]
		send(k, k.build(rnd, false))
	}
	after := scrape(t, metrics)
	if !slices.Equal(warm, after) {
		var added []string
		for _, s := range after {
			if !slices.Contains(warm, s) {
				added = append(added, s)
			}
		}
		if len(added) > 10 {
			added = append(added[:10], fmt.Sprintf("… and %d more", len(added)-10))
		}
		t.Fatalf("%d series after the warm-up, %d after %d random requests; new series:\n%s",
			len(warm), len(after), n, strings.Join(added, "\n"))
	}
	for _, s := range after {
		if strings.Contains(s, "api.example") {
			t.Errorf("a label from the Host header: %s", s)
		}
	}
}

// TestAlertCountersStartAtZero checks that the counters alerts are built
// on are on /metrics with value 0 before any such event: the rate-limit
// rejections of each kind and the error responses of every error code.
func TestAlertCountersStartAtZero(t *testing.T) {
	_, metrics := meteredAPI(t)
	rec := httptest.NewRecorder()
	metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	var want []string
	for _, kind := range []string{"token", "auth_failure", "in_flight"} {
		want = append(want, fmt.Sprintf(`fleet_ratelimit_rejections_total{kind=%q,`, kind))
	}
	for _, code := range api.ErrorCodes() {
		want = append(want, fmt.Sprintf(`fleet_api_errors_total{code=%q,`, code))
	}
	for _, prefix := range want {
		found := false
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, prefix) {
				found = true
				if !strings.HasSuffix(line, "} 0") {
					t.Errorf("before any request: %s", line)
				}
			}
		}
		if !found {
			t.Errorf("no series %s…} 0 before any request", prefix)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// TestErrorCounter checks that an error response counts under its code.
func TestErrorCounter(t *testing.T) {
	a, metrics := meteredAPI(t)
	for range 2 {
		a.get("/api/v2/me", "")
	}
	a.get("/api/v2/nope", "")
	rec := httptest.NewRecorder()
	metrics.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for code, want := range map[string]string{"AUTH_REQUIRED": "2", "NOT_FOUND": "1", "INVALID_TOKEN": "0"} {
		found := false
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, fmt.Sprintf(`fleet_api_errors_total{code=%q,`, code)) {
				found = true
				if !strings.HasSuffix(line, "} "+want) {
					t.Errorf("%s, want %s", line, want)
				}
			}
		}
		if !found {
			t.Errorf("no fleet_api_errors_total for %s", code)
		}
	}
}
