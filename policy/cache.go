package policy

import (
	"container/list"
	"sync"
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
func cached[T any](e *snapshot, kind, key string, compute func() (T, error)) (v T, hit bool, err error) {
	if c, ok := e.cache.get(key); ok {
		e.countLookup(kind, true)
		return c.(T), true, nil
	}
	e.countLookup(kind, false)
	if v, err = compute(); err != nil {
		var zero T
		return zero, false, err
	}
	e.cache.put(key, v)
	return v, false, nil
}

// countLookup records one cache lookup in fleet.policy.cache.
func (e *snapshot) countLookup(kind string, hit bool) {
	if s, ok := e.lookupSeries[kind]; ok {
		if hit {
			s[1].n.Add(1)
		} else {
			s[0].n.Add(1)
		}
		return
	}
	e.lookups.add(lookupAttrs(kind, hit)...)
}
