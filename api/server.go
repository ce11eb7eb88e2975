// Package api is fleetapi's HTTP layer: the Fuego server under /api/v2, the
// typed handlers and wire types, the success and error envelopes, the one
// error→status table, and the middleware of the request path (request id,
// server span, panic recovery, authentication, policy decision, body rules).
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/fleetapi/fleetapi/api/metering"
	"github.com/fleetapi/fleetapi/api/ratelimit"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/webhook"
)

// BasePath is the prefix of every client API route.
const BasePath = "/api/v2"

// MaxBodyBytes is the largest request body accepted (64 KiB).
const MaxBodyBytes = 64 << 10

// TracerName names the tracer of the api package.
const TracerName = "github.com/fleetapi/fleetapi/api"

// Span attribute keys set by the api package.
var (
	attrErrorCode   = attribute.Key("fleet.error.code")
	attrTokenID     = attribute.Key("fleet.token.id")
	attrAccountID   = attribute.Key("fleet.account.id")
	attrAccountType = attribute.Key("fleet.account.type")
	attrRequestID   = attribute.Key("fleet.request.id")
	attrResultCount = attribute.Key("fleet.result.count")
	attrDecision    = attribute.Key("fleet.decision.code")
	attrAuthCache   = attribute.Key("fleet.auth.cache")
)

// Authenticator verifies the Authorization header (tenancy.Authenticator)
// and says whether the principal came from its cache.
type Authenticator interface {
	AuthenticateCached(ctx context.Context, header string) (tenancy.Principal, tenancy.CacheOutcome, error)
}

// Policy answers the authorization questions (policy.Engine).
type Policy interface {
	// Pin fixes the policy revision of a request: every later answer for
	// the returned context comes from the revision in force when Pin ran,
	// so that a hot reload never mixes two sets in one request.
	Pin(ctx context.Context) context.Context
	// Revision is the policy revision in force (on /readyz).
	Revision() string
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
	Permissions(ctx context.Context, in policy.Input) (policy.Permissions, error)
	Scope(ctx context.Context, in policy.Input, resource policy.Resource) (policy.Scope, error)
	// ManagementScope and DecideManagement are the management policy
	// (docs/design.md §9, data.fleet.manage).
	ManagementScope(ctx context.Context, in policy.Input) (policy.Scope, error)
	DecideManagement(ctx context.Context, in policy.ManagementInput) (policy.Decision, error)
}

// Config holds what the server is built from.
type Config struct {
	Auth   Authenticator
	Policy Policy
	// Store reads and writes tenant data, always within a row scope: the
	// methods the handlers call (stores.go); *storage.Store implements it.
	Store Store
	// TracerProvider and Propagator trace requests; no-op and W3C trace
	// context when nil.
	TracerProvider trace.TracerProvider
	Propagator     propagation.TextMapPropagator
	// Logger receives request failures; slog's discard logger when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// MeterProvider receives the API's metrics; no-op when nil.
	MeterProvider metric.MeterProvider
	// Limiter counts requests against the rate limits; in-process when nil.
	Limiter ratelimit.Limiter
	// RateLimit is a token's budget per minute when the token sets none
	// (DefaultRateLimit when 0); AuthFailureLimit is a client address's
	// budget of failed authentications per minute (DefaultAuthFailureLimit
	// when 0).
	RateLimit        int
	AuthFailureLimit int
	// Ready is checked by /readyz (the database).
	Ready Pinger
	// MetricsHandler serves /metrics (the Prometheus exposition).
	MetricsHandler http.Handler
	// SeparateOps keeps /healthz, /readyz and /metrics off the API handler,
	// for serving OpsHandler on another address.
	SeparateOps bool
	// RequestTimeout bounds the work of one request (10 s when 0); a
	// request that runs out of time answers 503.
	RequestTimeout time.Duration
	// AuthSync, when not nil, returns once the replica's authentication
	// cache holds nothing older than the changes committed before the call
	// (authsync.Listener.Sync). A management write that changes what a
	// principal is made of (a token revoked, an account updated) calls it
	// before answering, so that the replica that made the change refuses
	// the old principal on the caller's next request.
	AuthSync func(context.Context) error
	// Usage, when not nil, counts what each authenticated request is
	// answered, per account, UTC day and route (docs/design.md §12, usage
	// metering); the caller runs its flushes (metering.Meter.Run) and its
	// last flush at shutdown.
	Usage *metering.Meter
	// TrustedProxies are the load balancers whose X-Forwarded-For is
	// believed when it names the client; empty trusts no header.
	TrustedProxies []netip.Prefix
	// TenantMaxInFlight bounds the requests one tenant (tenantOf: an
	// account, a subaccount counting as its parent user) has in the
	// handlers of this server at once, and so the database connections it
	// holds; 0 bounds nothing. TenantQueueTimeout is how long a request
	// over the bound waits for a slot before it is refused 429
	// (DefaultTenantQueueTimeout when 0).
	TenantMaxInFlight  int
	TenantQueueTimeout time.Duration
	// TenantStuckAfter is how long the oldest request holding a tenant's
	// slots has run when a request refused for want of a slot is a 503
	// (the server's trouble) rather than a 429 (the tenant's load); 0:
	// TenantQueueTimeout (no slot given back during the whole wait).
	TenantStuckAfter time.Duration
	// WebhookKeys seals the webhooks' secrets (FLEET_WEBHOOK_KEY); nil:
	// creating a webhook and rotating a secret answer 503
	// SERVICE_UNAVAILABLE (details.reason webhook_key_unset).
	WebhookKeys *webhook.KeyRing
	// WebhookURLs judges a webhook's url (FLEET_WEBHOOK_ALLOW_HTTP,
	// FLEET_WEBHOOK_ALLOW_NETS); nil: the defaults (https to public
	// addresses only).
	WebhookURLs *webhook.Client
	// Wakeups, when not nil, wakes the open notification streams when a
	// notification is stored (the replica's LISTEN session on
	// fleet_notifications); without it they poll every StreamRecheck.
	Wakeups *Wakeups
	// StreamHeartbeat is the time between two heartbeat comments of a
	// notification stream (DefaultStreamHeartbeat when zero).
	StreamHeartbeat time.Duration
	// StreamsPerAccount is the most open notification streams of one
	// account across the replicas (DefaultStreamsPerAccount when zero).
	StreamsPerAccount int
	// StreamBuffer is the most events a stream buffers for a slow reader
	// (DefaultStreamBuffer when zero).
	StreamBuffer int
	// StreamRecheck is the time between two re-checks of an open stream
	// (DefaultStreamRecheck when zero); StreamWriteTimeout bounds one
	// write to its client (DefaultStreamWriteTimeout when zero).
	StreamRecheck, StreamWriteTimeout time.Duration
	// PositionsRetention is how long positions are kept
	// (FLEET_POSITIONS_RETENTION): POST /readings refuses older readings
	// (READING_TOO_OLD). storage.DefaultPositionsRetention when 0.
	PositionsRetention time.Duration
}

// Server is the fleetapi HTTP API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	tracer  trace.Tracer
	fuego   *fuego.Server
	handler http.Handler
	limiter ratelimit.Limiter
	metrics *metrics
	// bodies are the buffers the hand-written encodings write into
	// (encodeBody), reused from one response to the next.
	bodies sync.Pool
	// openapi is the published OpenAPI document (openapi_doc.go).
	openapi []byte
	// routeNames name each route pattern ("GET /api/v2/events/{id}") as
	// usage counts it ("GET /events/{id}").
	routeNames map[string]string
	// draining is set when shutdown begins: /readyz answers 503 so that a
	// load balancer stops sending new requests.
	draining atomic.Bool
	// inFlight bounds each tenant's requests in flight (inflight.go).
	inFlight *inFlight
}

// Drain marks the server as shutting down: /readyz answers 503 from now
// on, while requests are still served.
func (s *Server) Drain() { s.draining.Store(true) }

// New builds the API server and its routes.
func New(cfg Config) (*Server, error) {
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = noop.NewTracerProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = propagation.TraceContext{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = metricnoop.NewMeterProvider()
	}
	if cfg.Limiter == nil {
		cfg.Limiter = ratelimit.NewLocal()
	}
	if cfg.RateLimit <= 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.AuthFailureLimit <= 0 {
		cfg.AuthFailureLimit = DefaultAuthFailureLimit
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	cfg.StreamHeartbeat = orDefaultDuration(cfg.StreamHeartbeat, DefaultStreamHeartbeat)
	cfg.StreamRecheck = orDefaultDuration(cfg.StreamRecheck, DefaultStreamRecheck)
	cfg.StreamWriteTimeout = orDefaultDuration(cfg.StreamWriteTimeout, DefaultStreamWriteTimeout)
	if cfg.StreamsPerAccount <= 0 {
		cfg.StreamsPerAccount = DefaultStreamsPerAccount
	}
	if cfg.StreamBuffer <= 0 {
		cfg.StreamBuffer = DefaultStreamBuffer
	}
	if cfg.WebhookURLs == nil {
		cfg.WebhookURLs = webhook.NewClient(webhook.Config{})
	}
	m, err := newMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, tracer: cfg.TracerProvider.Tracer(TracerName), limiter: cfg.Limiter, metrics: m,
		inFlight: newInFlight(cfg.TenantMaxInFlight, cfg.TenantQueueTimeout, cfg.TenantStuckAfter)}
	s.bodies.New = func() any { return new([]byte) }
	s.routeNames = routeNames()
	s.fuego = fuego.NewServer(
		fuego.WithoutStartupMessages(),
		fuego.WithLoggingMiddleware(fuego.LoggingConfig{DisableRequest: true, DisableResponse: true}),
		fuego.WithSerializer(s.sendJSON),
		fuego.WithErrorSerializer(s.writeError),
		fuego.WithMaxBodySize(MaxBodyBytes),
		fuego.WithDisallowUnknownFields(true),
		fuego.WithoutAutoGroupTags(),
		fuego.WithEngineOptions(
			fuego.WithOpenAPIConfig(fuego.OpenAPIConfig{
				DisableLocalSave:     true,
				DisableSwaggerUI:     true,
				DisableDefaultServer: true,
				DisableMessages:      true,
				Info: &openapi3.Info{
					Title:       "fleetapi client API",
					Version:     "2.0.0",
					Description: "Multi-tenant fleet tracking client API (v2).",
				},
				MiddlewareConfig: fuego.MiddlewareConfig{DisableControllerSection: true, DisableMiddlewareSection: true},
			}),
			fuego.WithErrorHandler(func(_ context.Context, err error) error { return errorFor(err) }),
		),
	)
	s.registerRoutes()
	if err := s.buildOpenAPI(); err != nil {
		return nil, err
	}

	if !cfg.SeparateOps {
		ops := s.OpsHandler()
		s.fuego.Mux.Handle("GET /healthz", ops)
		s.fuego.Mux.Handle("GET /readyz", ops)
		if cfg.MetricsHandler != nil {
			s.fuego.Mux.Handle("GET /metrics", ops)
		}
	}
	// Outside in: the response headers and the request id first, so that
	// every answer has them; then the server span and the request log, so
	// that both see the status of every answer, a recovered panic's 500
	// included.
	h := s.withRouteFallback(s.fuego.Mux)
	h = s.withRecovery(h)
	h = s.withRequestLog(h)
	h = otelhttp.NewHandler(h, "fleetapi",
		otelhttp.WithTracerProvider(cfg.TracerProvider),
		otelhttp.WithMeterProvider(cfg.MeterProvider),
		otelhttp.WithPropagators(cfg.Propagator),
		otelhttp.WithSpanNameFormatter(spanName),
	)
	h = withRequestID(h)
	h = withResponseHeaders(h)
	s.handler = h
	return s, nil
}

// spanName names a server span by its route pattern ("GET /api/v2/me"),
// or by the method alone for a request that matched no route.
func spanName(_ string, r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return r.Method
}

// Handler returns the HTTP handler of the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// OpenAPI returns the OpenAPI document of the API as JSON (the body of
// GET /api/v2/openapi.json).
func (s *Server) OpenAPI() ([]byte, error) {
	return append([]byte(nil), s.openapi...), nil
}

// registerRoutes registers the client API under BasePath, behind the
// guard. Each resource's file declares its operations (route, handler,
// parameters, responses, examples): adding a resource is one line here.
func (s *Server) registerRoutes() {
	v2 := fuego.Group(s.fuego, BasePath, fuego.OptionMiddleware(s.guard))
	s.registerMe(v2)
	s.registerServices(v2)
	s.registerPassengers(v2)
	s.registerReports(v2)
	s.registerEvents(v2)
	s.registerZones(v2)
	s.registerEventWrites(v2)
	s.registerServiceWrites(v2)
	s.registerReportWrites(v2)
	s.registerNotifications(v2)
	s.registerWebhooks(v2)
	s.registerObjects(v2)
	s.registerAccounts(v2)
	s.registerErase(v2)
	s.registerAuditEvents(v2)
	s.registerTokens(v2)
	s.registerGrants(v2)
	s.registerUsage(v2)
	s.registerReadings(v2)
	s.registerPositions(v2)
}
