package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestTracesEnabled(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
	}
	for _, tt := range tests {
		if got := tracesEnabled(envOf(tt.env)); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.env, got, tt.want)
		}
	}
}

func TestSetup(t *testing.T) {
	ctx := context.Background()
	p, err := Setup(ctx, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	// No exporter: nothing is recorded, but requests still get trace ids
	// for the request and decision logs.
	_, span := p.Tracer.Tracer("test").Start(ctx, "probe")
	if span.IsRecording() || !span.SpanContext().TraceID().IsValid() {
		t.Fatalf("no exporter: recording %v, trace id %v", span.IsRecording(), span.SpanContext().TraceID())
	}
	span.End()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	p, err = Setup(ctx, envOf(map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "fleetapi-test"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Tracer.(*sdktrace.TracerProvider); !ok {
		t.Fatalf("console exporter: tracer provider %T", p.Tracer)
	}
	_, span = p.Tracer.Tracer("test").Start(ctx, "probe")
	if !span.IsRecording() {
		t.Fatal("console exporter: the span is not recorded")
	}
	span.End()
	counter, err := p.Meter.Meter("test").Int64Counter("fleet.test.probes")
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(ctx, 1)
	rec := httptest.NewRecorder()
	p.MetricsHandler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "fleet_test_probes_total") || !strings.Contains(string(body), `service_name="fleetapi-test"`) {
		t.Fatalf("metrics exposition:\n%s", body)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMetricLabelsBounded checks that the meter provider of Setup drops,
// from any instrument of any library, the attributes whose values a
// client chooses, and keeps the others.
func TestMetricLabelsBounded(t *testing.T) {
	ctx := context.Background()
	p, err := Setup(ctx, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	h, err := p.Meter.Meter("any/library").Float64Histogram("probe.duration")
	if err != nil {
		t.Fatal(err)
	}
	dropped := []attribute.KeyValue{
		attribute.String("server.address", "evil.example"), attribute.Int("server.port", 31337),
		attribute.String("client.address", "203.0.113.9"), attribute.String("url.path", "/x/y"),
		attribute.String("url.query", "a=b"), attribute.String("user_agent.original", "ua/9"),
		attribute.String("http.request.method_original", "BREW"), attribute.String("http.request.header.x_forwarded_for", "x"),
		attribute.String("net.host.name", "old.example"), attribute.String("http.target", "/old"),
	}
	kept := []attribute.KeyValue{
		attribute.String("http.request.method", "_OTHER"), attribute.Int("http.response.status_code", 404),
		attribute.String("http.route", "/api/v2/me"), attribute.String("code", "NOT_FOUND"),
	}
	h.Record(ctx, 1, metric.WithAttributes(append(dropped, kept...)...))
	rec := httptest.NewRecorder()
	p.MetricsHandler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var line string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, "probe_duration_count{") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no probe_duration series:\n%s", rec.Body.String())
	}
	for _, kv := range dropped {
		if strings.Contains(line, strings.ReplaceAll(string(kv.Key), ".", "_")+"=") {
			t.Errorf("label %s kept: %s", kv.Key, line)
		}
	}
	for _, kv := range kept {
		if !strings.Contains(line, strings.ReplaceAll(string(kv.Key), ".", "_")+"=") {
			t.Errorf("label %s dropped: %s", kv.Key, line)
		}
	}
}
