package storage

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fleetapi/fleetapi/tenancy"
)

// authMeterName names the meter of the authentication cache's metrics.
const authMeterName = "github.com/fleetapi/fleetapi/storage/auth"

// RegisterMetrics reports the cache and the listener on mp, read when
// metrics are collected: fleet.auth.cache (lookups by result: hit, miss,
// bypass), fleet.auth.cache.invalidations, fleet.auth.cache.evictions,
// fleet.auth.cache.entries and fleet.auth.listener.connected (1 while the
// cache is trusted). Every label value is from a fixed set.
func (l *AuthListener) RegisterMetrics(mp metric.MeterProvider) error {
	m := mp.Meter(authMeterName)
	lookups, err := m.Int64ObservableCounter("fleet.auth.cache",
		metric.WithDescription("Authentication cache lookups, by result (hit, miss, bypass: no trusted cache)."))
	if err != nil {
		return err
	}
	inval, err := m.Int64ObservableCounter("fleet.auth.cache.invalidations",
		metric.WithDescription("Invalidation events applied to the authentication cache (a token, an account, a clear)."))
	if err != nil {
		return err
	}
	evict, err := m.Int64ObservableCounter("fleet.auth.cache.evictions",
		metric.WithDescription("Principals dropped from the authentication cache to keep its size bound."))
	if err != nil {
		return err
	}
	entries, err := m.Int64ObservableGauge("fleet.auth.cache.entries",
		metric.WithDescription("Principals held by the authentication cache."))
	if err != nil {
		return err
	}
	connected, err := m.Int64ObservableGauge("fleet.auth.listener.connected",
		metric.WithDescription("1 while the invalidation listener is connected and the authentication cache trusted, else 0."))
	if err != nil {
		return err
	}
	result := func(r tenancy.CacheOutcome) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("result", string(r)))
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := l.cache.Stats()
		o.ObserveInt64(lookups, int64(s.Hits), result(tenancy.CacheHit))
		o.ObserveInt64(lookups, int64(s.Misses), result(tenancy.CacheMiss))
		o.ObserveInt64(lookups, int64(s.Bypasses), result(tenancy.CacheBypass))
		o.ObserveInt64(inval, int64(s.Invalidations))
		o.ObserveInt64(evict, int64(s.Evictions))
		o.ObserveInt64(entries, int64(s.Entries))
		var c int64
		if l.Connected() {
			c = 1
		}
		o.ObserveInt64(connected, c)
		return nil
	}, lookups, inval, evict, entries, connected)
	return err
}
