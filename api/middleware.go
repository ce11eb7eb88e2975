package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

type requestIDKey struct{}

// requestIDFrom returns the request id stored by withRequestID.
func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// validRequestID accepts a client-supplied X-Request-Id of 1–128 visible
// ASCII characters from a conservative set.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// newRequestID returns 16 random bytes in hex, in one allocation (the
// string).
func newRequestID() string {
	var b [16]byte
	var x [32]byte
	_, _ = rand.Read(b[:])
	hex.Encode(x[:], b[:])
	return string(x[:])
}

// setHeader sets a header whose name is already in canonical form, without
// canonicalising it again: one allocation (the value's slice) instead of
// Header.Set's lookup of the canonical form.
func setHeader(h http.Header, canonicalKey, value string) {
	h[canonicalKey] = []string{value}
}

// The values of the headers every response carries, shared by every
// response: net/http only reads them, and a handler that sets one again
// replaces the slice, never writes into it.
var (
	valueNosniff = []string{"nosniff"}
	valueNoStore = []string{"no-store"}
	valueJSON    = []string{"application/json"}
)

// withRequestID gives every request an id (the client's X-Request-Id when it
// is well formed, a random one otherwise) and echoes it in the response.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		setHeader(w.Header(), "X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// withRecovery turns a panic in a handler into a 500 INTERNAL_ERROR in the
// error envelope; the stack goes to the log only.
func (s *Server) withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "panic", slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			s.writeError(w, r, fmt.Errorf("panic: %v", v))
		}()
		next.ServeHTTP(w, r)
	})
}

// withResponseHeaders sets the headers every response carries, whatever
// answers it: X-Content-Type-Options: nosniff, so that no browser reads a
// body as anything but its declared type, and Cache-Control: no-store, so
// that no cache keeps a tenant's data (or an error naming a token's
// limits) for another caller.
func withResponseHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Content-Type-Options"] = valueNosniff
		h["Cache-Control"] = valueNoStore
		next.ServeHTTP(w, r)
	})
}

// canonicalPath reports whether the path of u is spelt the one way the
// routes are written: absolute, without empty, "." or ".." segments (a
// trailing slash aside), and percent-encoded only where the path needs it
// (no encoded slash, dot or letter). Any other spelling of a route names
// no route: the mux would redirect it to its cleaned form, and a proxy in
// front might route or filter it by another form than the server does.
func canonicalPath(u *url.URL) bool {
	p := u.Path
	if !strings.HasPrefix(p, "/") || u.RawPath != "" {
		// RawPath is set only when the client's escaping differs from the
		// default one (url.URL.setPath).
		return false
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		if seg == "." || seg == ".." || seg == "" && i < len(segs)-1 {
			return false
		}
	}
	return true
}

// withRouteFallback answers unknown routes and non-canonical paths with
// 404 NOT_FOUND and known paths called with another method with 405
// METHOD_NOT_ALLOWED (and Allow), in the error envelope instead of the
// mux's plain text or redirect.
func (s *Server) withRouteFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r.URL) {
			s.writeError(w, r, newError(CodeNotFound, "no such route", map[string]any{"path": r.URL.Path}))
			return
		}
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, p := mux.Handler(probe); p != "" {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) == 0 {
			s.writeError(w, r, newError(CodeNotFound, "no such route", map[string]any{"path": r.URL.Path}))
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeError(w, r, newError(CodeMethodNotAllowed, "method not allowed for this route",
			map[string]any{"method": r.Method, "allow": allowed}))
	})
}

// statusRecorder remembers the status a handler wrote (the request log's;
// usageWriter's for the usage metering).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader remembers the first status.
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write remembers 200 when the handler wrote no status first.
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// withRequestLog writes one log line per request with its route, status,
// duration, request id and trace id, so that a trace id leads to the
// request (and from there to its decision-log line). It also sets the
// server span's client.address to the same client: otelhttp would take the
// first X-Forwarded-For entry from anyone.
func (s *Server) withRequestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		client := s.clientIP(r)
		trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("client.address", client))
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		sc := trace.SpanContextFromContext(r.Context())
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("route", r.Pattern),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Duration("duration", time.Since(start)),
			slog.String("request_id", requestIDFrom(r.Context())),
			slog.String("trace_id", sc.TraceID().String()),
			slog.String("client", client),
		)
	})
}
