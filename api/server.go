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

	"github.com/fleetapi/fleetapi/api/ratelimit"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
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
)

// Authenticator verifies the Authorization header (tenancy.Authenticator).
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (tenancy.Principal, error)
}

// Policy answers the authorization questions (policy.Engine).
type Policy interface {
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
	Permissions(ctx context.Context, in policy.Input) (map[string]any, error)
	Scope(ctx context.Context, in policy.Input, resource policy.Resource) (policy.Scope, error)
}

// Config holds what the server is built from.
type Config struct {
	Auth   Authenticator
	Policy Policy
	// Store reads and writes tenant data, always within a row scope: the
	// generic list of a resource (storage.List) needs the concrete store.
	Store *storage.Store
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
	// TrustedProxies are the load balancers whose X-Forwarded-For is
	// believed when it names the client; empty trusts no header.
	TrustedProxies []netip.Prefix
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
	// openapi is the published OpenAPI document (openapi_doc.go).
	openapi []byte
	// draining is set when shutdown begins: /readyz answers 503 so that a
	// load balancer stops sending new requests.
	draining atomic.Bool
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
	m, err := newMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, tracer: cfg.TracerProvider.Tracer(TracerName), limiter: cfg.Limiter, metrics: m}
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

func (s *Server) registerRoutes() {
	v2 := fuego.Group(s.fuego, BasePath, fuego.OptionMiddleware(s.guard))
	authErrors := errorResponses(http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable)
	fuego.Get(v2, "/me", s.getMe, routeOptions(authErrors, []fuego.RouteOption{
		fuego.OptionOperationID("get_me"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Read the authenticated account"),
		fuego.OptionDescription("The token's account and its effective permissions. Any valid token may read it; it takes no parameters."),
	})...)
	listRoute(v2, s, storage.Services, services, authErrors, []fuego.RouteOption{
		fuego.OptionOperationID("get_services"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Paged list of maintenance service records"),
		fuego.OptionDescription("The service records the caller may see, one page at a time. Needs the token permission GET /services."),
	})
	fuego.Get(v2, "/services/due", s.getServicesDue, routeOptions(authErrors, []fuego.RouteOption{
		fuego.OptionOperationID("get_services_due"), fuego.OptionTags("Maintenance"),
		fuego.OptionSummary("Maintenance records that are due"),
		fuego.OptionDescription("At most 500 due records of the caller's fleet, newest service first, computed for today (UTC). " +
			"A record is due when a criterion's remaining is zero or less, or within its *_left_num threshold. " +
			"Needs the token permission GET /services/due; takes no parameters."),
	})...)
	fuego.Post(v2, "/passengers", s.postPassengers, routeOptions(
		errorResponses(http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict,
			http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusTooManyRequests,
			http.StatusInternalServerError, http.StatusServiceUnavailable),
		[]fuego.RouteOption{
			fuego.OptionOperationID("create_passenger"), fuego.OptionTags("People and groups"),
			fuego.OptionSummary("Create a passenger"),
			fuego.OptionDescription("Creates a passenger in the caller's account (a subaccount's passenger belongs to its parent). " +
				"Needs the token permission POST /passengers and an account that is not read-only."),
			fuego.OptionDefaultStatusCode(http.StatusCreated),
			headerParam("Idempotency-Key", "Makes a retried create return the first response; the same key with another body is 409 IDEMPOTENCY_KEY_REUSED.",
				openapi3.NewStringSchema().WithMinLength(1).WithMaxLength(maxIdempotencyKey).WithPattern(`^[!-~]+$`)),
		})...)
	listRoute(v2, s, storage.Reports, same[storage.Report], authErrors, []fuego.RouteOption{
		fuego.OptionOperationID("get_reports"), fuego.OptionTags("Reports"),
		fuego.OptionSummary("Paged list of reports"),
		fuego.OptionDescription("The report definitions the caller may see. Needs the token permission GET /reports; a subaccount also needs the reports privilege. " +
			"A report naming a device that is not granted to a subaccount is not listed for it."),
	})
	listRoute(v2, s, storage.Events, same[storage.Event], authErrors, []fuego.RouteOption{
		fuego.OptionOperationID("get_events"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Paged list of event rules"),
		fuego.OptionDescription("The event rules the caller may see. Needs the token permission GET /events; a subaccount also needs the event_notifications privilege."),
	})
	listRoute(v2, s, storage.Objects, same[storage.Object], authErrors, []fuego.RouteOption{
		fuego.OptionOperationID("get_objects"), fuego.OptionTags("Fleet"),
		fuego.OptionSummary("Paged list of devices"),
		fuego.OptionDescription("The devices (objects) the caller may see: an admin every device, a manager its own and its managed accounts' devices, " +
			"a user its own, a subaccount those of its parent granted to it. Needs the token permission GET /objects."),
	})
	fuego.Get(v2, "/events/{id}", s.getEvent, routeOptions(authErrors, errorResponses(http.StatusNotFound), []fuego.RouteOption{
		fuego.OptionOperationID("get_event"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Read one event rule"),
		fuego.OptionDescription("One event rule by id. A rule outside the caller's scope is 404, like one that does not exist. " +
			"Needs the token permission GET /events/{id}; a subaccount also needs the event_notifications privilege."),
		pathIDParam("id", "Event rule id.", exampleEvent().EventID),
	})...)
}
