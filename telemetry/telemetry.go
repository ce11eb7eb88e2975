// Package telemetry sets up OpenTelemetry for fleetapi from the standard
// OTEL_* environment variables: traces go to OTLP when an endpoint is set,
// to the console with OTEL_TRACES_EXPORTER=console, and nowhere otherwise.
// It also builds the structured logger. It imports no other fleetapi package.
package telemetry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the default service.name resource attribute.
const ServiceName = "fleetapi"

// Providers holds the telemetry providers of one process.
type Providers struct {
	// Tracer is the tracer provider every component takes its tracer from.
	Tracer trace.TracerProvider
	// Meter is the meter provider; its metrics are always exposed in the
	// Prometheus format by MetricsHandler, and also exported by OTLP when
	// OTEL_METRICS_EXPORTER asks for it.
	Meter metric.MeterProvider
	// MetricsHandler serves the Prometheus scrape endpoint.
	MetricsHandler http.Handler
	// Propagator reads and writes trace context (W3C traceparent, baggage).
	Propagator propagation.TextMapPropagator
	shutdown   []func(context.Context) error
}

// Shutdown flushes pending telemetry and stops the exporters.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range p.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// tracesEnabled reports whether the environment asks for trace export:
// an explicit OTEL_TRACES_EXPORTER other than "none", or an OTLP endpoint.
func tracesEnabled(getenv func(string) string) bool {
	switch getenv("OTEL_TRACES_EXPORTER") {
	case "none":
		return false
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	}
	return true
}

// Setup builds the providers that the environment asks for. getenv reads
// the configuration (os.Getenv in production); the exporters themselves
// read the OTEL_* variables of the process environment. With no exporter
// configured the tracer provider is a no-op.
func Setup(ctx context.Context, getenv func(string) string) (*Providers, error) {
	p := &Providers{
		// Without an exporter spans are not recorded, but every request still
		// gets a trace id, which the request and decision logs carry.
		Tracer:     sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())),
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(serviceName(getenv))))
	if err != nil {
		return nil, err
	}
	if err := p.setupMetrics(ctx, getenv, res); err != nil {
		return nil, err
	}
	if !tracesEnabled(getenv) {
		return p, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	p.Tracer = tp
	p.shutdown = append(p.shutdown, tp.Shutdown)
	return p, nil
}

// setupMetrics builds the meter provider: a Prometheus reader on a
// registry of its own (served by MetricsHandler), Go runtime metrics, and
// an OTLP or console reader when OTEL_METRICS_EXPORTER names one.
func (p *Providers) setupMetrics(ctx context.Context, getenv func(string) string, res *resource.Resource) error {
	reg := prometheus.NewRegistry()
	prom, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(prom), sdkmetric.WithResource(res), sdkmetric.WithView(boundedAttributesView())}
	if e := getenv("OTEL_METRICS_EXPORTER"); e != "" && e != "none" && e != "prometheus" {
		reader, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return err
		}
		opts = append(opts, sdkmetric.WithReader(reader))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	if err := runtime.Start(runtime.WithMeterProvider(mp)); err != nil {
		return err
	}
	p.Meter = mp
	p.MetricsHandler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	p.shutdown = append(p.shutdown, mp.Shutdown)
	return nil
}

// boundedAttribute keeps an attribute as a metric label unless its value
// is chosen by the client of a request: the Host header (server.address,
// server.port), its address, the target, the user agent and the request
// and response headers, in the stable HTTP conventions and the older ones
// otelhttp emits with OTEL_SEMCONV_STABILITY_OPT_IN=http/dup. As labels
// they would make a series per value; traces keep them.
func boundedAttribute(kv attribute.KeyValue) bool {
	switch kv.Key {
	case "server.address", "server.port", "client.address", "client.port",
		"network.peer.address", "network.peer.port", "network.local.address", "network.local.port",
		"url.full", "url.path", "url.query", "url.fragment", "url.original",
		"user_agent.original", "http.request.method_original",
		"http.target", "http.url", "http.host", "http.client_ip", "http.user_agent", "http.server_name",
		"net.host.name", "net.host.port", "net.peer.name", "net.peer.port",
		"net.sock.peer.addr", "net.sock.peer.port", "net.sock.host.addr", "net.sock.host.port":
		return false
	}
	k := string(kv.Key)
	return !strings.HasPrefix(k, "http.request.header.") && !strings.HasPrefix(k, "http.response.header.")
}

// boundedAttributesView applies boundedAttribute to every instrument of
// every library (otelhttp, bunotel, fleetapi's own): the one place where a
// label with values a client chooses is dropped, whichever instrumentation
// would add it.
//
// It also drops otelhttp's request and response body size histograms
// (droppedInstruments): recording them was a third of a small request's
// metric cost (docs/performance.md, "The fixed cost of a request"), and
// the bytes each account is answered are counted by usage metering.
func boundedAttributesView() sdkmetric.View {
	bounded := sdkmetric.NewView(sdkmetric.Instrument{Name: "*"}, sdkmetric.Stream{AttributeFilter: boundedAttribute})
	return func(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
		s, ok := bounded(i)
		if ok && slices.Contains(droppedInstruments, i.Name) {
			s.Aggregation = sdkmetric.AggregationDrop{}
		}
		return s, ok
	}
}

// droppedInstruments are the instruments whose measurements are not
// aggregated or exported.
var droppedInstruments = []string{"http.server.request.body.size", "http.server.response.body.size"}

func serviceName(getenv func(string) string) string {
	if n := getenv("OTEL_SERVICE_NAME"); n != "" {
		return n
	}
	return ServiceName
}

// NewLogger returns the JSON logger of the process, writing to w.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
