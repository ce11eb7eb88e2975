package telemetry

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

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
