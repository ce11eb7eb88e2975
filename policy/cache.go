package policy

import (
	"container/list"
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// lruCache is a bounded least-recently-used map from cache keys to
// answers. A nil *lruCache caches nothing.
type lruCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used; values are *cacheEntry
	items map[string]*list.Element
}

type cacheEntry struct {
	key   string
	value any
}

// newLRUCache returns a cache of size entries (DefaultCacheSize for 0),
// or nil (no cache) for a negative size.
func newLRUCache(size int) *lruCache {
	if size < 0 {
		return nil
	}
	if size == 0 {
		size = DefaultCacheSize
	}
	return &lruCache{max: size, order: list.New(), items: make(map[string]*list.Element, size)}
}

func (c *lruCache) get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).value, true
}

func (c *lruCache) put(key string, value any) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*cacheEntry).value = value
		c.order.MoveToFront(el)
		return
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, value: value})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

func (c *lruCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// cached returns the value e's cache holds under key, or computes it with
// compute and caches it; hit reports which. The lookup is counted in
// fleet.policy.cache as kind. An error of compute is returned and
// nothing is cached.
func cached[T any](ctx context.Context, e *snapshot, kind, key string, compute func() (T, error)) (v T, hit bool, err error) {
	if c, ok := e.cache.get(key); ok {
		e.countLookup(ctx, kind, true)
		return c.(T), true, nil
	}
	e.countLookup(ctx, kind, false)
	if v, err = compute(); err != nil {
		var zero T
		return zero, false, err
	}
	e.cache.put(key, v)
	return v, false, nil
}

// countLookup records one cache lookup in fleet.policy.cache.
func (e *snapshot) countLookup(ctx context.Context, kind string, hit bool) {
	e.lookups.Add(ctx, 1, lookupOption(kind, hit))
}

// lookupOptions are the attribute sets of fleet.policy.cache for the
// kinds of question, built once: building a set per lookup was two of a
// request's allocations per question.
var lookupOptions = func() map[string][2]metric.AddOption {
	m := map[string][2]metric.AddOption{}
	for _, kind := range []string{"decide", "scope", "permissions"} {
		m[kind] = [2]metric.AddOption{lookupSet(kind, false), lookupSet(kind, true)}
	}
	return m
}()

func lookupSet(kind string, hit bool) metric.AddOption {
	result := "miss"
	if hit {
		result = "hit"
	}
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", kind), attribute.String("result", result)))
}

// lookupOption is the attribute set of one lookup: a prebuilt one for the
// known kinds, a new one otherwise.
func lookupOption(kind string, hit bool) metric.AddOption {
	if o, ok := lookupOptions[kind]; ok {
		if hit {
			return o[1]
		}
		return o[0]
	}
	return lookupSet(kind, hit)
}
