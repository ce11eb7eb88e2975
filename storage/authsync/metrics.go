package authsync

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
func (l *Listener) RegisterMetrics(mp metric.MeterProvider) error {
	m := mp.Meter(authMeterName)
	var inst [5]metric.Int64Observable
	for i, d := range []struct {
		name, desc string
		gauge      bool
	}{
		{"fleet.auth.cache", "Authentication cache lookups, by result (hit, miss, bypass: no trusted cache).", false},
		{"fleet.auth.cache.invalidations", "Invalidation events applied to the authentication cache (a token, an account, a clear).", false},
		{"fleet.auth.cache.evictions", "Principals dropped from the authentication cache to keep its size bound.", false},
		{"fleet.auth.cache.entries", "Principals held by the authentication cache.", true},
		{"fleet.auth.listener.connected", "1 while the invalidation listener is connected and the authentication cache trusted, else 0.", true},
	} {
		var err error
		if d.gauge {
			inst[i], err = m.Int64ObservableGauge(d.name, metric.WithDescription(d.desc))
		} else {
			inst[i], err = m.Int64ObservableCounter(d.name, metric.WithDescription(d.desc))
		}
		if err != nil {
			return err
		}
	}
	lookups, inval, evict, entries, connected := inst[0], inst[1], inst[2], inst[3], inst[4]
	result := func(r tenancy.CacheOutcome) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("result", string(r)))
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
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
