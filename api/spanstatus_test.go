package api_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/api"
)

// serverSpan returns the one server span among spans.
func serverSpan(t *testing.T, spans []sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() == trace.SpanKindServer {
			out = append(out, s)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d server spans; spans: %s", len(out), spanTree{spans})
	}
	return out[0]
}

// TestServerSpanStatus follows the OpenTelemetry HTTP conventions for
// every error code the API answers: a 4xx is the client's error, so
// neither the server span nor the api's and policy's spans under it have
// status Error (SQL spans keep bunotel's), while the server span carries the
// status code (http.response.status_code) and the API code
// (fleet.error.code); a 5xx sets status Error on the server span, with
// error.type naming the code.
func TestServerSpanStatus(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := newTestAPIWith(t, func(c *api.Config) {
		c.TracerProvider = tp
		c.AuthFailureLimit = 3
	})
	type call struct {
		method, path, token, contentType, body string
		headers                                []string
	}
	get := func(path, token string) call { return call{method: "GET", path: path, token: token} }
	post := func(token, contentType, body string, headers ...string) call {
		return call{"POST", "/api/v2/passengers", token, contentType, body, headers}
	}
	tests := []struct {
		code   string
		status int
		before []call // requests that set the stage, from the same address
		last   call
	}{
		{"INVALID_PARAMETER", 400, nil, get("/api/v2/services?per_page=0", "acme-all")},
		{"INVALID_BODY", 400, nil, post("acme-all", "application/json", `{"passenger_name":`)},
		{"VALIDATION_FAILED", 400, nil, post("acme-all", "application/json", `{}`)},
		{"AUTH_REQUIRED", 401, nil, get("/api/v2/me", "")},
		{"INVALID_TOKEN", 401, nil, get("/api/v2/me", "flt_"+strings.Repeat("0", 32))},
		{"TOKEN_EXPIRED", 401, nil, get("/api/v2/me", "acme-expired")},
		{"ACCOUNT_INACTIVE", 401, nil, get("/api/v2/me", "hooli-all")},
		{"ACCOUNT_EXPIRED", 401, nil, get("/api/v2/me", "soylent-all")},
		{"TOKEN_PERMISSION_DENIED", 403, nil, get("/api/v2/reports", "acme-services-only")},
		{"PRIVILEGE_REQUIRED", 403, nil, get("/api/v2/events", "acme-night-all")},
		{"READ_ONLY_ACCOUNT", 403, nil, post("umbrella-all", "application/json", `{"passenger_name":"x"}`)},
		{"MANAGEMENT_DENIED", 403, nil, call{"POST", "/api/v2/accounts", "acme-night-all", "application/json", `{"username":"span-x","type":"user"}`, nil}},
		{"QUOTA_EXCEEDED", 403, []call{{"PATCH", fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, "tailspin")), "northwind-all", "application/json", `{"quotas":{"passengers":0}}`, nil}},
			post("tailspin-all", "application/json", `{"passenger_name":"over"}`)},
		{"NOT_FOUND", 404, nil, get("/api/v2/events/999999999", "acme-all")},
		{"NOT_FOUND", 404, nil, get("/api/v2/nope", "")},
		{"METHOD_NOT_ALLOWED", 405, nil, call{method: "DELETE", path: "/api/v2/me"}},
		{"CONFLICT", 409, []call{post("acme-all", "application/json", `{"passenger_name":"a","passenger_assign_id":"span-dup"}`)},
			post("acme-all", "application/json", `{"passenger_name":"b","passenger_assign_id":"span-dup"}`)},
		{"IDEMPOTENCY_KEY_REUSED", 409, []call{post("acme-all", "application/json", `{"passenger_name":"a"}`, "Idempotency-Key", "span-key")},
			post("acme-all", "application/json", `{"passenger_name":"b"}`, "Idempotency-Key", "span-key")},
		{"PAYLOAD_TOO_LARGE", 413, nil, post("acme-all", "application/json", `{"passenger_name":"`+strings.Repeat("x", api.MaxBodyBytes)+`"}`)},
		{"UNSUPPORTED_MEDIA_TYPE", 415, nil, post("acme-all", "text/plain", `{"passenger_name":"x"}`)},
		{"RATE_LIMITED", 429, []call{get("/api/v2/me", "acme-ratelimited"), get("/api/v2/me", "acme-ratelimited"),
			get("/api/v2/me", "acme-ratelimited"), get("/api/v2/me", "acme-ratelimited"), get("/api/v2/me", "acme-ratelimited")},
			get("/api/v2/me", "acme-ratelimited")},
		{"RATE_LIMITED", 429, []call{get("/api/v2/me", "bad-1"), get("/api/v2/me", "bad-2"), get("/api/v2/me", "bad-3")},
			get("/api/v2/me", "acme-all")},
	}
	send := func(i int, c call) *httptest.ResponseRecorder {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		req.RemoteAddr = fmt.Sprintf("192.0.2.%d:1000", i+1) // each case its own failed-authentication budget
		switch {
		case strings.HasPrefix(c.token, "flt_"), strings.HasPrefix(c.token, "bad-"):
			req.Header.Set("Authorization", "Bearer "+c.token)
		case c.token != "":
			req.Header.Set("Authorization", "Bearer "+demoToken(t, c.token))
		}
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		for k := 0; k+1 < len(c.headers); k += 2 {
			req.Header.Set(c.headers[k], c.headers[k+1])
		}
		return a.raw(req)
	}
	codesSeen := map[string]bool{}
	for _, tt := range tests {
		codesSeen[tt.code] = true
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.code), func(t *testing.T) {
			for _, c := range tt.before {
				send(i, c)
			}
			rec.Reset()
			res := send(i, tt.last)
			if res.Code != tt.status || !strings.Contains(res.Body.String(), `"code":"`+tt.code+`"`) {
				t.Fatalf("status %d, want %d %s: %s", res.Code, tt.status, tt.code, res.Body.Bytes())
			}
			spans := rec.Ended()
			server := serverSpan(t, spans)
			if server.Status().Code != codes.Unset {
				t.Errorf("server span status %+v, want Unset", server.Status())
			}
			if v, _ := attr(server, "http.response.status_code"); v.AsInt64() != int64(tt.status) {
				t.Errorf("http.response.status_code = %d", v.AsInt64())
			}
			if v, _ := attr(server, "fleet.error.code"); v.AsString() != tt.code {
				t.Errorf("fleet.error.code = %q", v.AsString())
			}
			if _, ok := attr(server, "error.type"); ok {
				t.Errorf("error.type on a client error")
			}
			for _, s := range spans {
				// SQL spans (kind client) keep bunotel's status: a statement
				// that fails, a unique violation behind a 409 included, is an
				// error of that statement.
				if s.SpanKind() != trace.SpanKindClient && s.Status().Code == codes.Error {
					t.Errorf("span %q has status Error %q for a client error", s.Name(), s.Status().Description)
				}
			}
		})
	}
	// The table covers every 4xx code of the error table.
	for _, code := range api.ErrorCodes() {
		if !codesSeen[code] && code != "INTERNAL_ERROR" && code != "SERVICE_UNAVAILABLE" {
			t.Errorf("no case for %s", code)
		}
	}

	t.Run("503 SERVICE_UNAVAILABLE", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		a := newTestAPIWith(t, func(c *api.Config) {
			c.TracerProvider = tp
			c.RequestTimeout = time.Nanosecond // every database call fails: out of time
		})
		res := a.raw(httptestRequest("GET", "/api/v2/me", "Bearer "+demoToken(t, "acme-all"), "192.0.2.200:1"))
		if res.Code != 503 || !strings.Contains(res.Body.String(), `"code":"SERVICE_UNAVAILABLE"`) {
			t.Fatalf("status %d: %s", res.Code, res.Body.Bytes())
		}
		server := serverSpan(t, rec.Ended())
		if server.Status().Code != codes.Error {
			t.Errorf("server span status %+v, want Error", server.Status())
		}
		if v, _ := attr(server, "error.type"); v.AsString() != "SERVICE_UNAVAILABLE" {
			t.Errorf("error.type = %q", v.AsString())
		}
		if v, _ := attr(server, "fleet.error.code"); v.AsString() != "SERVICE_UNAVAILABLE" {
			t.Errorf("fleet.error.code = %q", v.AsString())
		}
		if v, _ := attr(server, "http.response.status_code"); v.AsInt64() != 503 {
			t.Errorf("http.response.status_code = %d", v.AsInt64())
		}
	})
}
