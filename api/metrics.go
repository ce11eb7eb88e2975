package api

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName names the meter of the api package.
const MeterName = "github.com/fleetapi/fleetapi/api"

// Rate-limit rejection kinds, the values of the kind label of
// fleet.ratelimit.rejections.
const (
	rejectToken       = "token"
	rejectAuthFailure = "auth_failure"
	// rejectInFlight: a tenant over its bound of requests in flight
	// (inflight.go).
	rejectInFlight = "in_flight"
)

// metrics holds the api package's own instruments; request counts and
// durations by route and status come from otelhttp. Every label value is
// from a fixed set (a kind, an error code of the table), never from the
// request, and every series exists at zero from the start, so that an
// alert on a rate sees the first event.
type metrics struct {
	rejections metric.Int64Counter
	errors     metric.Int64Counter
}

func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	m := mp.Meter(MeterName)
	rej, err := m.Int64Counter("fleet.ratelimit.rejections",
		metric.WithDescription("Requests refused with 429, by kind (token, auth_failure, in_flight)."))
	if err != nil {
		return nil, err
	}
	errs, err := m.Int64Counter("fleet.api.errors",
		metric.WithDescription("Error responses, by error code (docs/design.md §4)."))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	for _, kind := range []string{rejectToken, rejectAuthFailure, rejectInFlight} {
		rej.Add(ctx, 0, metric.WithAttributes(attribute.String("kind", kind)))
	}
	for _, code := range errorCodes() {
		errs.Add(ctx, 0, metric.WithAttributes(attribute.String("code", code)))
	}
	return &metrics{rejections: rej, errors: errs}, nil
}

func (m *metrics) rateLimited(ctx context.Context, kind string) {
	m.rejections.Add(ctx, 1, metric.WithAttributes(attribute.String("kind", kind)))
}

// errored counts an error response. code is always a code of the table:
// errorFor and decisionError make no other.
func (m *metrics) errored(ctx context.Context, code string) {
	m.errors.Add(ctx, 1, metric.WithAttributes(attribute.String("code", code)))
}
