package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/api"
)

// spanTree is the recorded spans of one trace, by name and parent.
type spanTree struct {
	spans []sdktrace.ReadOnlySpan
}

func (st spanTree) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range st.spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func (st spanTree) one(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := st.named(name)
	if len(s) != 1 {
		t.Fatalf("%d spans named %q; spans: %s", len(s), name, st)
	}
	return s[0]
}

func (st spanTree) String() string {
	var names []string
	for _, s := range st.spans {
		names = append(names, s.Name())
	}
	return strings.Join(names, ", ")
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// childOf checks that child's parent is parent.
func childOf(t *testing.T, child, parent sdktrace.ReadOnlySpan) {
	t.Helper()
	if child.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("span %q is not a child of %q", child.Name(), parent.Name())
	}
}

// TestSpanTree checks, for every endpoint, the spans of one request: the
// server span named by route, authentication, rate limit, policy decision,
// scope, SQL statements and encoding, with their attributes, and that the
// incoming traceparent is honoured.
func TestSpanTree(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := newTestAPIWith(t, func(c *api.Config) { c.TracerProvider = tp })
	tok := demoToken(t, "acme-all")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	tests := []struct {
		method, path, route, body string
		status                    int
		scope                     bool
		count                     int64 // -1: do not check
	}{
		{"GET", "/api/v2/me", "GET /api/v2/me", "", 200, false, 1},
		{"GET", "/api/v2/services", "GET /api/v2/services", "", 200, true, -1},
		{"GET", "/api/v2/services/due", "GET /api/v2/services/due", "", 200, true, -1},
		{"POST", "/api/v2/passengers", "POST /api/v2/passengers", `{"passenger_name":"Traced"}`, 201, true, 1},
		{"GET", "/api/v2/reports", "GET /api/v2/reports", "", 200, true, -1},
		{"GET", "/api/v2/events", "GET /api/v2/events", "", 200, true, -1},
		{"GET", "/api/v2/events/1", "GET /api/v2/events/{id}", "", 200, true, 1},
	}
	for i, tt := range tests {
		t.Run(tt.route, func(t *testing.T) {
			rec.Reset()
			parent := fmt.Sprintf("00-%s-%016x-01", traceID, i+1)
			var body *strings.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			headers := []string{"Authorization", "Bearer " + tok, "traceparent", parent}
			if body != nil {
				headers = append(headers, "Content-Type", "application/json")
				res := a.do(tt.method, tt.path, body, headers...)
				if res.status != tt.status {
					t.Fatalf("status %d: %s", res.status, res.raw)
				}
			} else if res := a.do(tt.method, tt.path, nil, headers...); res.status != tt.status {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
			st := spanTree{rec.Ended()}
			server := st.one(t, tt.route)
			if server.SpanKind() != trace.SpanKindServer {
				t.Fatalf("server span kind %v", server.SpanKind())
			}
			if got := server.SpanContext().TraceID().String(); got != traceID {
				t.Fatalf("trace id %s, want the incoming %s", got, traceID)
			}
			if v, _ := attr(server, "http.route"); v.AsString() != strings.SplitN(tt.route, " ", 2)[1] {
				t.Errorf("http.route = %q", v.AsString())
			}
			if v, _ := attr(server, "fleet.account.type"); v.AsString() != "user" {
				t.Errorf("fleet.account.type = %q", v.AsString())
			}
			if v, _ := attr(server, "fleet.token.id"); v.AsInt64() < 1 {
				t.Errorf("fleet.token.id = %v", v.AsInt64())
			}
			if v, _ := attr(server, "fleet.decision.code"); v.AsString() != "ALLOW" {
				t.Errorf("fleet.decision.code = %q", v.AsString())
			}
			if v, ok := attr(server, "fleet.result.count"); !ok || tt.count >= 0 && v.AsInt64() != tt.count {
				t.Errorf("fleet.result.count = %v (set %v)", v.AsInt64(), ok)
			}
			for _, name := range []string{"auth.authenticate", "ratelimit.client", "ratelimit", "policy.decide", "response.encode"} {
				childOf(t, st.one(t, name), server)
			}
			if v, _ := attr(st.one(t, "auth.authenticate"), "fleet.token.id"); v.AsInt64() < 1 {
				t.Errorf("auth span without token id")
			}
			if tt.scope {
				childOf(t, st.one(t, "policy.scope"), server)
			}
			// Order: authentication, decision (its account part belongs to
			// authentication), rate limit, (scope), encoding.
			order := []string{"auth.authenticate", "policy.decide", "ratelimit"}
			if tt.scope {
				order = append(order, "policy.scope")
			}
			order = append(order, "response.encode")
			for k := 1; k < len(order); k++ {
				if !st.one(t, order[k-1]).EndTime().Before(st.one(t, order[k]).StartTime()) &&
					!st.one(t, order[k-1]).EndTime().Equal(st.one(t, order[k]).StartTime()) {
					t.Errorf("%s does not end before %s starts", order[k-1], order[k])
				}
			}
			sql := 0
			for _, s := range st.spans {
				if _, ok := attr(s, "db.statement"); ok {
					sql++
					if s.SpanContext().TraceID() != server.SpanContext().TraceID() {
						t.Errorf("SQL span %q in another trace", s.Name())
					}
				}
				if v, ok := attr(s, "db.statement"); ok && strings.Contains(v.AsString(), "flt_") {
					t.Errorf("a token secret in SQL span %q", s.Name())
				}
			}
			if sql == 0 {
				t.Errorf("no SQL spans; spans: %s", st)
			}
		})
	}
	t.Run("a client error leaves the span status unset", func(t *testing.T) {
		rec.Reset()
		res := a.do("GET", "/api/v2/reports", nil, "Authorization", demoToken(t, "acme-services-only"))
		if res.status != 403 {
			t.Fatalf("status %d", res.status)
		}
		server := spanTree{rec.Ended()}.one(t, "GET /api/v2/reports")
		if server.Status().Code != codes.Unset {
			t.Fatalf("status %+v", server.Status())
		}
		if v, _ := attr(server, "fleet.error.code"); v.AsString() != "TOKEN_PERMISSION_DENIED" {
			t.Fatalf("fleet.error.code = %q", v.AsString())
		}
		rec.Reset()
		a.do("GET", "/api/v2/me", nil, "Authorization", "Bearer flt_"+strings.Repeat("0", 32))
		st := spanTree{rec.Ended()}
		if s := st.one(t, "auth.authenticate"); s.Status().Code != codes.Unset {
			t.Fatalf("auth span status %+v", s.Status())
		}
		if v, _ := attr(st.one(t, "auth.authenticate"), "fleet.error.code"); v.AsString() != "INVALID_TOKEN" {
			t.Fatalf("auth span fleet.error.code = %q", v.AsString())
		}
	})
	_ = http.StatusOK
	_ = context.Background
}
