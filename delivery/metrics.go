package delivery

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/webhook"
)

// MeterName names the meter of the delivery package.
const MeterName = "github.com/fleetapi/fleetapi/delivery"

// metrics are the sender's instruments (docs/webhooks.md, "Metrics and
// limits"). No tenant id is a label: only the outcome's class.
type metrics struct {
	attempted, succeeded, failed, skipped, disabled, canceled metric.Int64Counter
	duration                                                  metric.Float64Histogram
}

// newMetrics makes the instruments of mp, and the queue's gauges, which
// read store at each collection.
func newMetrics(mp metric.MeterProvider, store Store) (*metrics, error) {
	m := mp.Meter(MeterName)
	var out metrics
	var err error
	counter := func(name, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var c metric.Int64Counter
		c, err = m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{delivery}"))
		return c
	}
	out.attempted = counter("fleet.webhook.deliveries.attempted", "Attempts to send a webhook delivery, by class of outcome.")
	out.succeeded = counter("fleet.webhook.deliveries.succeeded", "Deliveries answered 2xx.")
	out.failed = counter("fleet.webhook.deliveries.failed", "Deliveries that failed every attempt of the schedule.")
	out.skipped = counter("fleet.webhook.deliveries.skipped", "Deliveries skipped: the owner could no longer list the notification.")
	out.canceled = counter("fleet.webhook.sends.canceled", "Sends canceled in flight by a DELETE, a deactivation or an erase of their webhook (rolled back, not recorded).")
	out.disabled = counter("fleet.webhook.endpoints.disabled", "Endpoints disabled after failing every attempt for the disable period.")
	if err != nil {
		return nil, err
	}
	if out.duration, err = m.Float64Histogram("fleet.webhook.attempt.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of one attempt to send a delivery, connection included.")); err != nil {
		return nil, err
	}
	depth, err := m.Int64ObservableGauge("fleet.webhook.queue.depth", metric.WithUnit("{delivery}"),
		metric.WithDescription("Pending deliveries of active endpoints that are due now."))
	if err != nil {
		return nil, err
	}
	lag, err := m.Float64ObservableGauge("fleet.webhook.queue.lag", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest due delivery has been due (0: none)."))
	if err != nil {
		return nil, err
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		q, err := store.Deliveries(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(depth, q.Due)
		l := 0.0
		if !q.OldestDue.IsZero() {
			l = max(time.Since(q.OldestDue).Seconds(), 0)
		}
		o.ObserveFloat64(lag, l)
		return nil
	}, depth, lag)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// attempt counts one recorded attempt.
func (m *metrics) attempt(ctx context.Context, res webhook.Result, rec storage.Recorded) {
	class := string(res.Class)
	if res.OK {
		class = "ok"
	} else if class == "" {
		class = "other"
	}
	m.attempted.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", class)))
	m.duration.Record(ctx, res.Duration.Seconds())
	switch rec.State {
	case storage.DeliverySucceeded:
		m.succeeded.Add(ctx, 1)
	case storage.DeliveryFailed:
		m.failed.Add(ctx, 1)
	}
	if rec.Disabled {
		m.disabled.Add(ctx, 1)
	}
}
