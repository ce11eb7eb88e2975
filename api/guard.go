package api

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

type callKey struct{}

// call is what the guard learned about a request: who calls, and the
// policy input built for the route.
type call struct {
	principal tenancy.Principal
	input     policy.Input
	// usage, when metering is on, counts the request's answer.
	usage *usageWriter
}

func callFrom(ctx context.Context) (call, bool) {
	c, ok := ctx.Value(callKey{}).(call)
	return c, ok
}

// routeOf splits the mux pattern of r ("GET /api/v2/events/{id}") into the
// method and the route template relative to BasePath ("/events/{id}").
func routeOf(r *http.Request) (method, route string) {
	method, path, _ := strings.Cut(r.Pattern, " ")
	return method, strings.TrimPrefix(path, BasePath)
}

// guard runs the checks of docs/design.md §4 in order before a handler: the
// client's failed-authentication budget and authentication, with the
// account-state part of the policy decision (401), the token's rate limit
// (429), the route part of the policy decision (403), then the body rules
// of write routes (415, 413). Every API response is JSON, so the
// Content-Type is set here, before any handler writes a status.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Bound the work of the request: past the timeout its context ends
		// and a database call that was waiting fails fast with 503.
		// A stream (streamRoute) stays open: it has no timeout, and its
		// writes extend their own deadlines (notifystream.go).
		_, route := routeOf(r)
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		if route == streamRoute {
			cancel()
			ctx, cancel = context.WithCancel(r.Context())
		}
		defer cancel()
		// One policy revision answers the whole request: its decision here
		// and its scopes in the handler (docs/design.md §10, hot reload).
		if s.cfg.Policy != nil {
			ctx = s.cfg.Policy.Pin(ctx)
		}
		w.Header()["Content-Type"] = valueJSON
		w = frameworkHeaderScrubber{w}
		trace.SpanFromContext(ctx).SetAttributes(attrRequestID.String(requestIDFrom(ctx)))
		ip := s.clientIP(r)
		if err := s.checkClient(ctx, ip); err != nil {
			s.writeError(w, r, err)
			return
		}
		p, err := s.authenticate(ctx, r)
		if err != nil {
			if errorFor(err).Status == http.StatusUnauthorized {
				s.recordAuthFailure(ctx, ip)
			}
			s.writeError(w, r, err)
			return
		}
		if s.cfg.Usage == nil {
			s.serveAuthenticated(ctx, w, r, p, nil, next)
			return
		}
		// From here on the answer is the account's (docs/design.md §12, usage
		// metering): a refusal (429, 403, 400) counts, a 401 above does
		// not. A panic below leaves usage.done false: the recovery's 500.
		usage := &usageWriter{statusRecorder: statusRecorder{ResponseWriter: w}}
		defer s.meter(usage, r, p)
		s.serveAuthenticated(ctx, usage, r, p, usage, next)
		usage.done = true
	})
}

// serveAuthenticated is the guard past authentication: the route decision,
// the rate limit, the body rules, a slot among the tenant's requests in
// flight (inflight.go), then next with the call in the context.
func (s *Server) serveAuthenticated(ctx context.Context, w http.ResponseWriter, r *http.Request, p tenancy.Principal, usage *usageWriter, next http.Handler) {
	method, route := routeOf(r)
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("http.route", BasePath+route))
	in := policy.NewInput(p, method, route, s.cfg.Now().UTC())
	d, err := s.cfg.Policy.Decide(ctx, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	code := "ALLOW"
	if !d.Allow {
		code = d.Code
	}
	trace.SpanFromContext(ctx).SetAttributes(attrDecision.String(code))
	// The decision is made once; a denial of the account itself
	// (ACCOUNT_INACTIVE, ACCOUNT_EXPIRED: 401) is part of authentication
	// and answered before the rate limit, the route denials (403) after.
	denial := decisionError(d)
	if !d.Allow && denial.Status == http.StatusUnauthorized {
		s.writeError(w, r, denial)
		return
	}
	if err := s.checkToken(ctx, w, p); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !d.Allow {
		s.writeError(w, r, denial)
		return
	}
	if r.Method == http.MethodDelete || bodylessPosts[method+" "+route] {
		if err := checkNoBody(r); err != nil {
			s.writeError(w, r, err)
			return
		}
	} else if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := checkBody(w, r, bodyLimit(method, route)); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	// The tenant's slot last: a request refused above holds none. A
	// stream holds none: it is bounded by its own limit (the account's
	// open streams), not by the requests in flight.
	if route != streamRoute {
		release, err := s.enterTenant(ctx, p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
	}
	ctx = context.WithValue(ctx, callKey{}, call{principal: p, input: in, usage: usage})
	next.ServeHTTP(w, r.WithContext(ctx))
}

// authenticate verifies the Authorization header inside its own span.
func (s *Server) authenticate(ctx context.Context, r *http.Request) (tenancy.Principal, error) {
	ctx, span := s.tracer.Start(ctx, "auth.authenticate")
	defer span.End()
	values := r.Header.Values("Authorization")
	if len(values) > 1 {
		span.SetAttributes(attrErrorCode.String(CodeInvalidToken))
		return tenancy.Principal{}, tenancy.ErrInvalidToken
	}
	header := ""
	if len(values) == 1 {
		header = values[0]
	}
	p, outcome, err := s.cfg.Auth.AuthenticateCached(ctx, header)
	span.SetAttributes(attrAuthCache.String(string(outcome)))
	if err != nil {
		// A rejected credential is the client's error and leaves the
		// status unset, like the server span's; a lookup that failed
		// (5xx) is an error of the span.
		e := errorFor(err)
		span.SetAttributes(attrErrorCode.String(e.Code))
		if e.Status >= 500 {
			span.SetStatus(codes.Error, e.Code)
		}
		return tenancy.Principal{}, err
	}
	attrs := []attribute.KeyValue{attrTokenID.Int64(p.Token.ID), attrAccountID.Int64(p.Account.ID), attrAccountType.String(string(p.Account.Type))}
	span.SetAttributes(attrs...)
	trace.SpanFromContext(r.Context()).SetAttributes(attrs...)
	return p, nil
}

// decisionError turns a denying policy decision into its API error. The
// status comes from the code's row in the error table; a code the table
// does not know is still a denial (403), never an allow.
func decisionError(d policy.Decision) *Error {
	if d.Allow {
		return nil
	}
	status, ok := codeStatus[d.Code]
	if !ok || status < 400 || status >= 500 {
		return &Error{Status: http.StatusForbidden, Code: CodeTokenPermissionDenied, Message: "access denied by policy"}
	}
	msg := d.Message
	if msg == "" {
		msg = "access denied by policy"
	}
	return &Error{Status: status, Code: d.Code, Message: msg, Details: d.Details}
}

// bodyLimit is the largest body of the route: MaxReadingsBodyBytes for
// POST /readings (a batch of readings), MaxBodyBytes for every other.
func bodyLimit(method, route string) int64 {
	if method == http.MethodPost && route == "/readings" {
		return MaxReadingsBodyBytes
	}
	return MaxBodyBytes
}

// checkBody enforces the body rules of write routes: JSON only (415) and at
// most limit bytes (413).
func checkBody(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return newError(CodeUnsupportedMediaType, "the request body must be application/json", map[string]any{"content_type": r.Header.Get("Content-Type")})
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	return nil
}

// bodylessPosts are the POST routes that take no body (an action on one
// resource): like DELETE, a body is refused and none needs a Content-Type.
var bodylessPosts = map[string]bool{
	"POST /webhooks/{id}/rotate-secret":                  true,
	"POST /webhooks/{id}/test":                           true,
	"POST /webhooks/{id}/deliveries/{delivery_id}/retry": true,
}

// checkNoBody refuses a body on a route that takes none (DELETE): 400
// INVALID_BODY, whatever its Content-Type.
func checkNoBody(r *http.Request) error {
	if r.ContentLength == 0 || r.Body == nil {
		return nil
	}
	n, _ := io.ReadFull(r.Body, make([]byte, 1))
	if r.ContentLength > 0 || n > 0 {
		return invalidBody("this route takes no body", nil)
	}
	return nil
}

// frameworkHeaderScrubber drops the headers Fuego adds to every response
// (X-Powered-By, Server-Timing and its Trailer declaration) before the
// status is written: they are not part of the API's contract and tell a
// caller about the implementation.
type frameworkHeaderScrubber struct {
	http.ResponseWriter
}

func (f frameworkHeaderScrubber) scrub() {
	h := f.ResponseWriter.Header()
	h.Del("X-Powered-By")
	h.Del("Server-Timing")
	h.Del("Trailer")
}

// WriteHeader scrubs the framework headers, then writes the status.
func (f frameworkHeaderScrubber) WriteHeader(code int) {
	f.scrub()
	f.ResponseWriter.WriteHeader(code)
}

// Write scrubs the framework headers before an implicit 200.
func (f frameworkHeaderScrubber) Write(b []byte) (int, error) {
	f.scrub()
	return f.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (f frameworkHeaderScrubber) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// tooLarge is the 413 of a body over limit bytes.
func tooLarge(limit int64) *Error {
	size := fmt.Sprintf("%d KiB", limit>>10)
	if limit >= 1<<20 && limit%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", limit>>20)
	}
	return newError(CodePayloadTooLarge, "the request body is larger than "+size, map[string]any{"limit_bytes": limit})
}
