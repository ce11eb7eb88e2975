package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/metering"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/telemetry"
	"github.com/fleetapi/fleetapi/tenancy"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// benchEvent is the API over the demo data with the telemetry serve sets
// up (tracer, Prometheus meter, JSON access log), and one of acme's event
// rules with the token that reads it.
func benchEvent(b *testing.B) (*testAPI, int64, string) {
	b.Helper()
	return benchEventWith(b, nil)
}

// benchEventWith is benchEvent with configure (when not nil) adjusting
// the server's configuration last.
func benchEventWith(b *testing.B, configure func(*api.Config)) (*testAPI, int64, string) {
	b.Helper()
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	a := newTestAPIWith(b, func(c *api.Config) {
		c.TracerProvider, c.MeterProvider, c.Propagator = tel.Tracer, tel.Meter, tel.Propagator
		c.Logger = telemetry.NewLogger(io.Discard, slog.LevelInfo)
		// A budget no run reaches: the default (1,200 a minute) would
		// refuse a long run with 429.
		c.RateLimit = math.MaxInt32
		if configure != nil {
			configure(c)
		}
	})
	var id int64
	if err := a.db.DB.NewRaw("SELECT e.event_id FROM events e JOIN accounts a ON a.id = e.account_id WHERE a.username = 'acme' ORDER BY 1 LIMIT 1").
		Scan(context.Background(), &id); err != nil {
		b.Fatal(err)
	}
	return a, id, demoToken(b, "acme-all")
}

// benchGet sends GET path with token through a's whole handler chain in
// the benchmark's loop, reporting allocations and CPU, and stops the
// benchmark on an answer other than 200 or one ok (when not nil) refuses.
func benchGet(b *testing.B, a *testAPI, path, token string, ok func(*httptest.ResponseRecorder) bool) {
	b.Helper()
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		a.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || (ok != nil && !ok(rec)) {
			b.Fatalf("GET %s: status %d, headers %v: %s", path, rec.Code, rec.Header(), rec.Body.Bytes())
		}
	}
}

// BenchmarkEventByIDRequest: GET /events/{id} through the whole handler
// chain (request id, security headers, otelhttp, access log, recovery,
// guard with authentication and the policy, Fuego, encoding) without the
// network: the server's fixed cost of a request plus its storage calls.
// Compare with BenchmarkEventByIDFloor (docs/performance.md).
func BenchmarkEventByIDRequest(b *testing.B) {
	a, id, token := benchEvent(b)
	path := fmt.Sprintf("/api/v2/events/%d", id)
	benchGet(b, a, path, token, nil)
}

// BenchmarkTracing: GET /events/{id} and GET /me through the whole handler
// chain with tracing off (what serve runs without an exporter: a tracer
// provider that samples nothing, so every span is a non-recording one)
// and on (every span recorded and handed to a batch span processor whose
// exporter drops them: the SDK's whole cost without an exporter's
// encoding and network). The difference is the cost of tracing a request
// (docs/performance.md, "The fixed cost of a request").
func BenchmarkTracing(b *testing.B) {
	for _, route := range []string{"events", "me"} {
		for _, traced := range []bool{false, true} {
			b.Run(route+map[bool]string{false: "/off", true: "/on"}[traced], func(b *testing.B) {
				var spans *sdktrace.TracerProvider
				a, id, token := benchEventWith(b, func(c *api.Config) {
					if traced {
						spans = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
							sdktrace.WithBatcher(tracetest.NewNoopExporter()))
						c.TracerProvider = spans
					}
				})
				if spans != nil {
					b.Cleanup(func() { _ = spans.Shutdown(context.Background()) })
				}
				path := "/api/v2/me"
				if route == "events" {
					path = fmt.Sprintf("/api/v2/events/%d", id)
				}
				benchGet(b, a, path, token, nil)
			})
		}
	}
}

// BenchmarkEventByIDRequestMetered: BenchmarkEventByIDRequest with usage
// metering on (Config.Usage, docs/design.md §12): the answer's status, bytes and
// rows counted and added to the meter's in-memory map. Its difference from
// BenchmarkEventByIDRequest is the per-request cost of metering
// (docs/performance.md). No flush runs during the run: flushes are off the
// request path (every FLEET_USAGE_FLUSH_INTERVAL, one statement).
func BenchmarkEventByIDRequestMetered(b *testing.B) {
	meter, err := metering.New(storage.NewStore(nil), metering.Options{Interval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	a, id, token := benchEventWith(b, func(c *api.Config) { c.Usage = meter })
	path := fmt.Sprintf("/api/v2/events/%d", id)
	benchGet(b, a, path, token, nil)
	if meter.Pending() != 1 {
		b.Fatalf("%d usage keys, want 1", meter.Pending())
	}
}

// BenchmarkServicesRequest: GET /services (a page of 50 of acme's service
// records) through the whole handler chain, without and with usage
// metering (the list's rows are counted too).
func BenchmarkServicesRequest(b *testing.B) {
	for _, metered := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "metered"}[metered], func(b *testing.B) {
			meter, err := metering.New(storage.NewStore(nil), metering.Options{Interval: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			a, _, token := benchEventWith(b, func(c *api.Config) {
				if metered {
					c.Usage = meter
				}
			})
			benchGet(b, a, "/api/v2/services", token, nil)
		})
	}
}

// BenchmarkEventByIDRequestAccountLimit: BenchmarkEventByIDRequest with an
// account rate limit on the token's account (docs/design.md §12), one more budget
// in the same rate-limit call: its difference from BenchmarkEventByIDRequest
// is the per-request cost of the account budget (docs/performance.md).
func BenchmarkEventByIDRequestAccountLimit(b *testing.B) {
	a, id, token := benchEvent(b)
	if _, err := a.db.DB.NewRaw("UPDATE accounts SET rate_limit = ? WHERE username = 'acme'", math.MaxInt32).Exec(context.Background()); err != nil {
		b.Fatal(err)
	}
	path := fmt.Sprintf("/api/v2/events/%d", id)
	benchGet(b, a, path, token, func(rec *httptest.ResponseRecorder) bool {
		return rec.Header().Get("RateLimit-Limit") == strconv.Itoa(math.MaxInt32)
	})
}

// BenchmarkEventByIDFloor: the storage call of GET /events/{id} alone,
// with the scope the policy compiles for the same principal (the
// harness's floor).
func BenchmarkEventByIDFloor(b *testing.B) {
	a, id, token := benchEvent(b)
	ctx := context.Background()
	hash, err := tenancy.HashToken(token)
	if err != nil {
		b.Fatal(err)
	}
	p, _, err := a.store.PrincipalByTokenHash(ctx, hash)
	if err != nil {
		b.Fatal(err)
	}
	engine, err := policy.New(ctx, policy.Options{Schema: storage.Schema()})
	if err != nil {
		b.Fatal(err)
	}
	scope, err := engine.Scope(ctx, policy.NewInput(p, "GET", "/events/{id}", time.Now().UTC()), "events")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := a.store.EventByID(ctx, scope, id); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports the process's CPU time (user and system, all threads:
// the collector and the telemetry's goroutines included) per iteration as
// cpu-ns/op, from the call to the call of the function it returns. Unlike
// ns/op it does not count the time spent waiting for PostgreSQL, so it is
// the figure to compare with the harness's CPU per request.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
