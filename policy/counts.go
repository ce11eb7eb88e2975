package policy

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// counts is a monotonic counter counted in memory and exported by an
// observable instrument: a count is an atomic add on its series, and the
// meter reads every series when it collects. The policy counts two to
// three answers per request (a decision, a scope or the permissions, each
// a cache lookup); a synchronous counter's Add resolved and filtered its
// attribute set on every call, about 2 % of a small request's CPU
// (docs/performance.md, "The fixed cost of a request"). The exported series,
// names and labels are those of the synchronous counters they replace.
type counts struct {
	mu     sync.RWMutex
	series map[attribute.Distinct]*series
	// order keeps the series in the order they were first counted, so that
	// a collection observes them in a stable order.
	order []*series
}

// series is one attribute set of a counts and its count.
type series struct {
	set attribute.Set
	n   atomic.Int64
}

// newCounts registers an observable counter named name on meter and
// returns its counts.
func newCounts(meter metric.Meter, name, description string) (*counts, error) {
	c := &counts{series: map[attribute.Distinct]*series{}}
	_, err := meter.Int64ObservableCounter(name, metric.WithDescription(description),
		metric.WithInt64Callback(c.observe))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// of returns the series of the attributes kvs, created at zero on first
// use. Hot paths keep the series they count (lookup, allowed) rather than
// finding it per call.
func (c *counts) of(kvs ...attribute.KeyValue) *series {
	set := attribute.NewSet(kvs...)
	key := set.Equivalent()
	c.mu.RLock()
	s, ok := c.series[key]
	c.mu.RUnlock()
	if ok {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok = c.series[key]; !ok {
		s = &series{set: set}
		c.series[key] = s
		c.order = append(c.order, s)
	}
	return s
}

// add counts one in the series of kvs.
func (c *counts) add(kvs ...attribute.KeyValue) { c.of(kvs...).n.Add(1) }

func (c *counts) observe(_ context.Context, o metric.Int64Observer) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, s := range c.order {
		o.Observe(s.n.Load(), metric.WithAttributeSet(s.set))
	}
	return nil
}

// cacheKinds are the kinds of question whose cache lookups are counted in
// fleet.policy.cache.
var cacheKinds = []string{"decide", "scope", "permissions"}

// lookupSeries are the fleet.policy.cache series of the known kinds, miss
// and hit, created at zero when the engine starts.
type lookupSeries map[string][2]*series

func newLookupSeries(c *counts) lookupSeries {
	m := lookupSeries{}
	for _, kind := range cacheKinds {
		m[kind] = [2]*series{c.of(lookupAttrs(kind, false)...), c.of(lookupAttrs(kind, true)...)}
	}
	return m
}

func lookupAttrs(kind string, hit bool) []attribute.KeyValue {
	result := "miss"
	if hit {
		result = "hit"
	}
	return []attribute.KeyValue{attribute.String("kind", kind), attribute.String("result", result)}
}
