package api

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName names the meter of the api package.
const MeterName = "github.com/fleetapi/fleetapi/api"

// metrics holds the api package's own instruments; request counts and
// durations by route and status come from otelhttp.
type metrics struct {
	rejections metric.Int64Counter
}

func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	m := mp.Meter(MeterName)
	rej, err := m.Int64Counter("fleet.ratelimit.rejections",
		metric.WithDescription("Requests refused with 429, by kind (token, auth_failure)."))
	if err != nil {
		return nil, err
	}
	return &metrics{rejections: rej}, nil
}

func (m *metrics) rateLimited(ctx context.Context, kind string) {
	m.rejections.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", kind)))
}
