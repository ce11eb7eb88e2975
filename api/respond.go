package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// encodeJSON writes v as JSON followed by a newline, without escaping
// HTML characters: the one encoding of every response body.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSON writes v as the JSON response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header()["Content-Type"] = valueJSON
	w.WriteHeader(status)
	_ = encodeJSON(w, v)
}

// writeError writes err in the error envelope. Internal causes are logged
// once and recorded on the request's span, never sent to the client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := errorFor(err)
	ctx := r.Context()
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attrErrorCode.String(e.Code))
	s.metrics.errored(ctx, e.Code)
	// OpenTelemetry's HTTP conventions: a 4xx is the client's error and
	// leaves the server span's status unset (the status code and
	// fleet.error.code say what happened); a 5xx is the server's, with
	// error.type naming it (otelhttp sets the span's status to Error).
	switch {
	case e.Status >= 500 && errors.Is(ctx.Err(), context.Canceled):
		// The client went away: not a failure of the service.
		s.log.InfoContext(ctx, "request abandoned by the client", slog.String("code", e.Code), slog.Any("error", e.cause),
			slog.String("request_id", requestIDFrom(ctx)))
	case e.Status >= 500:
		span.SetAttributes(semconv.ErrorTypeKey.String(e.Code))
		span.SetStatus(codes.Error, e.Code)
		if e.cause != nil {
			span.RecordError(e.cause)
		}
		s.log.ErrorContext(ctx, "request failed", slog.String("code", e.Code), slog.Any("error", e.cause),
			slog.String("request_id", requestIDFrom(ctx)))
	}
	if e.Status == http.StatusUnauthorized {
		challenge := `Bearer realm="fleetapi"`
		if e.Code != CodeAuthRequired {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, ErrorEnvelope{Success: false, Error: e, Meta: Meta{RequestID: requestIDFrom(ctx)}})
}

// sendJSON is Fuego's serializer for every success response: the API
// answers JSON whatever the Accept header says (the guard has set the
// Content-Type). It runs in the response.encode span, which carries the
// number of items of a list; that number is also the rows of the
// request's usage (metering).
func (s *Server) sendJSON(w http.ResponseWriter, r *http.Request, ans any) error {
	_, span := s.tracer.Start(r.Context(), "response.encode")
	defer span.End()
	if c, ok := ans.(interface{ count() (int, bool) }); ok {
		n, list := c.count()
		span.SetAttributes(attrResultCount.Int(n))
		trace.SpanFromContext(r.Context()).SetAttributes(attrResultCount.Int(n))
		if cl, ok := callFrom(r.Context()); ok && list && cl.usage != nil {
			cl.usage.rows = n
		}
	}
	err := s.encodeBody(w, ans)
	if err != nil {
		span.SetStatus(codes.Error, "encode")
		span.RecordError(err)
	}
	return err
}

// encodeBody writes a success body: lists of service records and single
// event rules by hand (encode_direct.go), in a buffer the server reuses,
// everything else through encodeJSON.
func (s *Server) encodeBody(w io.Writer, ans any) error {
	if d, ok := ans.(interface {
		appendJSON([]byte) ([]byte, bool, error)
	}); ok {
		bp := s.bodies.Get().(*[]byte)
		b, done, err := d.appendJSON((*bp)[:0])
		if done && err == nil {
			_, err = w.Write(b)
		}
		// Keep buffers of ordinary responses for the next one; a large
		// page's is left to the collector.
		if cap(b) <= maxPooledBody {
			*bp = b
			s.bodies.Put(bp)
		}
		if done {
			return err
		}
	}
	return encodeJSON(w, ans)
}

// maxPooledBody is the largest response buffer kept for reuse.
const maxPooledBody = 64 << 10
