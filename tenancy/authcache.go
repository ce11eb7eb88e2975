package tenancy

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCacheSize is the number of principals a PrincipalCache holds when
// its configuration gives no size: at a few hundred bytes to a few KiB per
// principal (permissions, privileges, the ancestor chain), some MiB.
const DefaultCacheSize = 10000

// DefaultCacheMaxAge bounds how long a cached principal is served before
// it is loaded again, whatever the notifications said: a second line of
// defence, not the invalidation itself.
const DefaultCacheMaxAge = time.Minute

// CacheOutcome says where Authenticate found the principal.
type CacheOutcome string

// The outcomes of a cache lookup, the values of the span attribute and
// metric label.
const (
	// CacheHit: served from the cache, no database round trip.
	CacheHit CacheOutcome = "hit"
	// CacheMiss: the cache was trusted but did not hold the token.
	CacheMiss CacheOutcome = "miss"
	// CacheBypass: no cache, or the cache is not trusted (its listener is
	// not connected and synchronised).
	CacheBypass CacheOutcome = "bypass"
)

// CacheStats are the counters of a PrincipalCache since it was made.
type CacheStats struct {
	Hits, Misses, Bypasses uint64
	// Invalidations counts the invalidation events applied (a token, an
	// account, a clear), whether or not they removed an entry; Evictions
	// the entries dropped to keep the bound.
	Invalidations, Evictions uint64
	// Entries is the number of principals held now.
	Entries int
	// Trusted reports whether the cache is consulted now.
	Trusted bool
}

// PrincipalCache holds authenticated principals in memory, keyed by token
// hash, bounded in size (least recently used first out). It is consulted
// only while trusted: its owner (the invalidation listener) marks it
// trusted once it receives every change notification, and distrusts it
// (which also empties it) the moment it may miss one. Every invalidation
// advances an epoch; a principal loaded from the database is stored only
// if no invalidation happened since its lookup began (Epoch, then Add), so
// that a lookup racing with a change cannot store what the change undid.
// Only tokens that exist and are not revoked enter it: an unknown token
// never takes a place, and a newly created one is never refused from it.
// Principals handed out share their slices and must be treated as
// read-only. It is safe for concurrent use.
type PrincipalCache struct {
	size   int
	maxAge time.Duration

	mu      sync.Mutex
	trusted bool
	// until, when not zero, ends the trust by itself (TrustUntil): the
	// cache is consulted only before it, on the process's monotonic clock.
	until   time.Time
	epoch   uint64
	lru     *list.List // of *cacheEntry, most recently used first
	byHash  map[TokenHash]*list.Element
	byToken map[int64]*list.Element
	// byAccount indexes each entry under its account and every ancestor,
	// so that a change to an account drops the principals below it.
	byAccount map[int64]map[*list.Element]struct{}
	// changed is closed, and replaced, by every invalidation (Changed).
	changed chan struct{}

	hits, misses, bypasses, invalidations, evictions atomic.Uint64
}

type cacheEntry struct {
	hash     TokenHash
	p        Principal
	loadedAt time.Time
}

// NewPrincipalCache returns an empty, untrusted cache of at most size
// principals (DefaultCacheSize when size ≤ 0), each served for at most
// maxAge (DefaultCacheMaxAge when maxAge ≤ 0).
func NewPrincipalCache(size int, maxAge time.Duration) *PrincipalCache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	if maxAge <= 0 {
		maxAge = DefaultCacheMaxAge
	}
	return &PrincipalCache{
		size: size, maxAge: maxAge, lru: list.New(),
		byHash: map[TokenHash]*list.Element{}, byToken: map[int64]*list.Element{},
		byAccount: map[int64]map[*list.Element]struct{}{}, changed: make(chan struct{}),
	}
}

// Changed returns a channel closed by the next invalidation (a token, an
// account, everything, or the loss of trust): the open notification
// streams wait on it to re-authenticate their token at once (a revoked
// token's stream ends within a second on every replica). Call it again
// after it fires for the next one.
func (c *PrincipalCache) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// signal wakes the waiters of Changed; c.mu is held.
func (c *PrincipalCache) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Get returns the principal cached under hash. The outcome is CacheBypass
// when the cache is not trusted (or its trust has run out, TrustUntil),
// CacheMiss when it holds nothing fresh under hash. now is the time the
// principal's age is judged at; the trust is judged on the process's own
// clock.
func (c *PrincipalCache) Get(hash TokenHash, now time.Time) (Principal, CacheOutcome) {
	c.mu.Lock()
	if !c.trustedNow() {
		c.mu.Unlock()
		c.bypasses.Add(1)
		return Principal{}, CacheBypass
	}
	el, ok := c.byHash[hash]
	if ok && now.Sub(el.Value.(*cacheEntry).loadedAt) > c.maxAge {
		c.remove(el)
		ok = false
	}
	if !ok {
		c.mu.Unlock()
		c.misses.Add(1)
		return Principal{}, CacheMiss
	}
	c.lru.MoveToFront(el)
	p := el.Value.(*cacheEntry).p
	c.mu.Unlock()
	c.hits.Add(1)
	return p, CacheHit
}

// Epoch returns the current epoch, to be passed to Add after a lookup.
func (c *PrincipalCache) Epoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// Add stores p under hash, loaded at now by a lookup that began at epoch.
// It stores nothing when the cache is not trusted or an invalidation
// happened since that epoch, and reports whether it stored.
func (c *PrincipalCache) Add(hash TokenHash, p Principal, epoch uint64, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.trustedNow() || epoch != c.epoch {
		return false
	}
	if el, ok := c.byHash[hash]; ok {
		c.remove(el)
	}
	if el, ok := c.byToken[p.Token.ID]; ok {
		c.remove(el)
	}
	el := c.lru.PushFront(&cacheEntry{hash: hash, p: p, loadedAt: now})
	c.byHash[hash] = el
	c.byToken[p.Token.ID] = el
	for _, id := range accountIDs(p) {
		set := c.byAccount[id]
		if set == nil {
			set = map[*list.Element]struct{}{}
			c.byAccount[id] = set
		}
		set[el] = struct{}{}
	}
	for c.lru.Len() > c.size {
		c.remove(c.lru.Back())
		c.evictions.Add(1)
	}
	return true
}

// Touched records that the token cached under hash was marked used at t,
// so that the next requests do not write last_used_at again.
func (c *PrincipalCache) Touched(hash TokenHash, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byHash[hash]; ok {
		e := el.Value.(*cacheEntry)
		e.p.Token.LastUsedAt = &t
	}
}

// InvalidateToken drops the principal of the token id, and any lookup in
// flight.
func (c *PrincipalCache) InvalidateToken(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.signal()
	c.invalidations.Add(1)
	if el, ok := c.byToken[id]; ok {
		c.remove(el)
	}
}

// InvalidateAccount drops every principal whose account or ancestor is
// the account id, and any lookup in flight.
func (c *PrincipalCache) InvalidateAccount(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.signal()
	c.invalidations.Add(1)
	for el := range c.byAccount[id] {
		c.remove(el)
	}
}

// Clear drops every principal, and any lookup in flight.
func (c *PrincipalCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.signal()
	c.invalidations.Add(1)
	c.clear()
}

// Trust empties the cache and starts consulting it, with no end. Its
// owner calls it once it is sure to receive every later change
// notification.
func (c *PrincipalCache) Trust() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restart(true, time.Time{})
}

// TrustUntil consults the cache until deadline (a time.Now reading, so
// judged on the monotonic clock), after which it is bypassed by itself,
// with nobody having to act: its owner extends the deadline each time it
// has proof that it has applied every change committed up to a moment,
// and a deadline that is not extended in time ends the trust even when
// the owner is frozen. A cache that was not trusted is emptied first; a
// trusted one keeps its entries (an extension proves they are current),
// and a deadline never moves back.
func (c *PrincipalCache) TrustUntil(deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.trusted {
		c.restart(true, deadline)
		return
	}
	if !c.until.IsZero() && deadline.After(c.until) {
		c.until = deadline
	}
}

// trustedNow reports whether the cache is consulted now; c.mu is held.
func (c *PrincipalCache) trustedNow() bool {
	return c.trusted && (c.until.IsZero() || time.Now().Before(c.until))
}

// Distrust stops consulting the cache and empties it. Its owner calls it
// the moment it may have missed a change notification.
func (c *PrincipalCache) Distrust() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.restart(false, time.Time{})
}

// restart empties the cache, ends the lookups in flight and sets whether
// it is consulted, until when (zero: no end); c.mu is held.
func (c *PrincipalCache) restart(trusted bool, until time.Time) {
	c.epoch++
	c.signal()
	c.clear()
	c.trusted = trusted
	c.until = until
}

// Contains reports whether a principal is cached under hash (fresh or
// not), without counting a lookup.
func (c *PrincipalCache) Contains(hash TokenHash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byHash[hash]
	return ok
}

// Stats returns the cache's counters.
func (c *PrincipalCache) Stats() CacheStats {
	c.mu.Lock()
	n, trusted := c.lru.Len(), c.trustedNow()
	c.mu.Unlock()
	return CacheStats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Bypasses: c.bypasses.Load(),
		Invalidations: c.invalidations.Load(), Evictions: c.evictions.Load(),
		Entries: n, Trusted: trusted,
	}
}

// remove drops one entry from the list and every index; c.mu is held.
func (c *PrincipalCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.byHash, e.hash)
	if c.byToken[e.p.Token.ID] == el {
		delete(c.byToken, e.p.Token.ID)
	}
	for _, id := range accountIDs(e.p) {
		if set := c.byAccount[id]; set != nil {
			delete(set, el)
			if len(set) == 0 {
				delete(c.byAccount, id)
			}
		}
	}
}

// clear drops every entry; c.mu is held.
func (c *PrincipalCache) clear() {
	c.lru.Init()
	clear(c.byHash)
	clear(c.byToken)
	clear(c.byAccount)
}

// accountIDs are the accounts a principal depends on: its own and every
// ancestor's.
func accountIDs(p Principal) []int64 {
	ids := make([]int64, 0, 1+len(p.Ancestors))
	ids = append(ids, p.Account.ID)
	for _, a := range p.Ancestors {
		ids = append(ids, a.ID)
	}
	return ids
}
