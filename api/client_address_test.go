package api_test

import (
	"net/netip"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fleetapi/fleetapi/api"
)

// TestClientAddressOnSpan: the server span's client.address is the same
// client as the request log's and the failed-authentication budget's —
// X-Forwarded-For counts only when a trusted proxy sent it. (otelhttp
// alone takes the first X-Forwarded-For entry from anyone.)
func TestClientAddressOnSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := newTestAPIWith(t, func(c *api.Config) {
		c.TracerProvider = tp
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	tok := "Bearer " + demoToken(t, "acme-all")
	tests := []struct{ name, peer, xff, want string }{
		{"direct, no header", "192.0.2.50:4000", "", "192.0.2.50"},
		{"direct, forged header", "192.0.2.50:4000", "198.51.100.77", "192.0.2.50"},
		{"direct, forged chain", "192.0.2.50:4000", "198.51.100.77, 10.0.0.7", "192.0.2.50"},
		{"trusted proxy", "10.0.0.5:4000", "203.0.113.9", "203.0.113.9"},
		{"trusted proxies chain", "10.0.0.5:4000", "198.51.100.1, 203.0.113.9, 10.0.0.7", "203.0.113.9"},
		{"trusted proxy, malformed chain", "10.0.0.5:4000", "203.0.113.9, not-an-ip", "10.0.0.5"},
		{"trusted proxy, no header", "10.0.0.5:4000", "", "10.0.0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec.Reset()
			req := httptestRequest("GET", "/api/v2/me", tok, tt.peer)
			if tt.xff != "" {
				req.Header.Set("X-Forwarded-For", tt.xff)
			}
			if st := a.serve(req); st != 200 {
				t.Fatalf("status %d", st)
			}
			server := spanTree{rec.Ended()}.one(t, "GET /api/v2/me")
			if v, _ := attr(server, "client.address"); v.AsString() != tt.want {
				t.Fatalf("client.address = %q, want %q", v.AsString(), tt.want)
			}
		})
	}
}
