package paging

import (
	"container/heap"
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// The kept totals' cache (docs/architecture.md, "Paging"). Bounded by the
// bytes its entries hold, not by their number: an entry is a key (a hash),
// a version, a total and up to KeptIDsMax ids. Each entry belongs to a
// tenant, the scope it was counted for, and the cache makes room by
// dropping the least recently used entry of the tenant that holds the
// most bytes: a tenant that lists many distinct filters or terms evicts
// its own entries once it holds more than the others, and a tenant that
// holds no more than any other loses none to it.

// KeptIDsMax is the most ids kept with one total (Cache.MaxIDs): a
// search of a scope whose pages walk the table (compiledScope.spread), or
// a list of such a scope whose page would be read as a deferred join,
// keeps the ids of its rows, in order, when it has at most this many, and
// its pages in id order are then read by key (docs/decisions.md, "Kept
// ids"). A list with more rows is dense enough for the walk to find a page
// quickly, or is read as a deferred join.
const KeptIDsMax = 50_000

// Kept is a total and the version it was counted at, and, for a
// count asked with its ids (Cache.Keep), the ids of the rows in
// ascending order when there are at most KeptIDsMax of them.
type Kept struct {
	Version Version
	Total   int64
	IDs     []int64
}

// answers reports whether k answers a request that asks for the ids
// (withIDs) or not: a total counted without its ids answers only the
// latter, and is counted again, with them, for the former.
func (k Kept) answers(withIDs bool, maxIDs int64) bool {
	return !withIDs || k.IDs != nil || k.Total > maxIDs
}

// Version is the version of a scope's rows (kept.go).
type Version struct {
	Started    string
	Generation int64
	Changes    int64
}

// countResult is what a shared count returns: the total with its version
// and whether it was counted (not found kept), or the error and whether the
// context the count ran under had ended.
type countResult struct {
	kept    Kept
	counted bool
	err     error
	expired bool
}

// Count returns the total of key at the version now: kept, or counted by
// run once for all the callers that miss it at the same time, and kept. A
// caller that joins the count after it ended finds the kept total. A count
// shared by several is valid for each of them: it reads the version in
// its own snapshot, and that version is now or a later one (a snapshot
// that saw now or newer), never older than what a caller saw before asking.
// The count runs under the context of the caller that started it, without
// its cancellation (a client that goes away does not fail the others) but
// with its deadline; a caller whose own context is still live when a count
// fails because the starter's deadline passed asks again.
func (c *Cache) Count(ctx context.Context, key Key, now Version, withIDs bool, run func(context.Context) (Kept, error)) (Kept, error) {
	if k, ok := c.Get(key.ID); ok && k.Version == now && k.answers(withIDs, c.MaxIDs) {
		c.Reused.Add(1)
		return k, nil
	}
	flight := string(key.ID[:]) + "\x00" + now.Started + "\x00" + strconv.FormatInt(now.Generation, 10) + "\x00" + strconv.FormatInt(now.Changes, 10) + "\x00" + strconv.FormatBool(withIDs)
	for {
		ch := c.flight.DoChan(flight, func() (any, error) {
			if k, ok := c.Get(key.ID); ok && k.Version == now && k.answers(withIDs, c.MaxIDs) {
				return countResult{kept: k}, nil
			}
			fctx := context.WithoutCancel(ctx)
			deadline, bounded := ctx.Deadline()
			if bounded {
				var cancel context.CancelFunc
				fctx, cancel = context.WithDeadline(fctx, deadline)
				defer cancel()
			}
			k, err := run(fctx)
			if err != nil {
				// A dial or read that hit the deadline may fail before the
				// context's own timer has fired: the clock decides.
				expired := fctx.Err() != nil || bounded && !time.Now().Before(deadline)
				return countResult{err: err, expired: expired}, nil
			}
			c.Counted.Add(1)
			c.Put(key, k)
			return countResult{kept: k, counted: true}, nil
		})
		select {
		case <-ctx.Done():
			return Kept{}, ctx.Err()
		case r := <-ch:
			res := r.Val.(countResult)
			if res.err != nil && res.expired && live(ctx) {
				continue
			}
			if res.err == nil && (!res.counted || r.Shared) {
				c.Reused.Add(1)
			}
			return res.kept, res.err
		}
	}
}

// live reports whether ctx has neither ended nor passed its deadline by
// the clock (its timer may fire a little after a dial that hit the same
// deadline has failed).
func live(ctx context.Context) bool {
	deadline, bounded := ctx.Deadline()
	return ctx.Err() == nil && (!bounded || time.Now().Before(deadline))
}

// CacheBytes bounds the bytes the kept totals of a Store (and of
// its replica Stores) hold together: entries, their ids and their
// tenants, as entryBytes and tenantBytes account them.
const CacheBytes = 24 << 20

// Accounted sizes (TestTotalsCacheHeldBytes checks them against the heap
// an entry really holds): an entry's fixed part — the map entry, the list
// element, the keptEntry and its version — and a tenant's.
const (
	entryOverhead  = 256
	tenantOverhead = 192
)

// Key is where a total is kept: id, the hash of everything the
// total depends on (Cache.Key), and tenant, the hash of the scope it
// was counted for. SHA-256, so that no two statements share an entry, a
// tenant's chosen filter values included: a collision would need one of
// SHA-256.
type Key struct {
	ID, Tenant [sha256.Size]byte
}

// Cache keeps, per count query (the scope, the filters and the
// search, rendered with their values and hashed: Key), the total
// counted and the version of the scope it was counted at. It is shared by
// the Stores made from one (its replicas under keys of their own,
// Store.server: a version holds its server). A nil *Cache keeps
// nothing.
type Cache struct {
	mu      sync.Mutex
	items   map[[sha256.Size]byte]*list.Element
	tenants map[[sha256.Size]byte]*tenantTotals
	// byBytes orders the tenants that hold entries, the most bytes first.
	byBytes tenantHeap
	// bytes is what the entries and tenants hold (entryBytes,
	// tenantOverhead); maxBytes bounds it (CacheBytes; the tests
	// lower it).
	bytes, maxBytes int
	// MaxIDs is the most ids kept with one total (KeptIDsMax; the tests
	// lower it before the Cache is used).
	MaxIDs int64
	// buffers are reused to render the statements a key is hashed from.
	buffers sync.Pool
	// flight runs one count per (key, version, with or without ids) at a
	// time.
	flight singleflight.Group
	// Counted counts the totals counted (no entry, or a stale one);
	// Reused the totals answered from an entry or from a count another
	// request was running.
	Counted, Reused atomic.Int64
}

// keptEntry is one kept total, an element of its tenant's list.
type keptEntry struct {
	id     [sha256.Size]byte
	tenant *tenantTotals
	kept   Kept
	bytes  int
}

// tenantTotals are the entries of one tenant, the most recently used
// first, and the bytes they hold.
type tenantTotals struct {
	id      [sha256.Size]byte
	entries list.List
	bytes   int
	// index is its place in Cache.byBytes.
	index int
}

func NewCache() *Cache {
	return &Cache{items: map[[sha256.Size]byte]*list.Element{}, tenants: map[[sha256.Size]byte]*tenantTotals{},
		maxBytes: CacheBytes, MaxIDs: KeptIDsMax}
}

// entryBytes is what an entry keeping k accounts for: its fixed part,
// the version's text and the ids' backing array.
func entryBytes(k Kept) int {
	return entryOverhead + len(k.Version.Started) + 8*cap(k.IDs)
}

// Get returns the total kept under id, which becomes its tenant's most
// recently used.
func (c *Cache) Get(id [sha256.Size]byte) (Kept, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[id]
	if !ok {
		return Kept{}, false
	}
	e := el.Value.(*keptEntry)
	e.tenant.entries.MoveToFront(el)
	return e.kept, true
}

// Put keeps k under key, replacing what key held. To stay within
// maxBytes it first drops the least recently used entries of the tenant
// that holds the most bytes, the key's own tenant included: a miss costs
// one count, as without the cache. An entry larger than the whole budget
// is not kept.
func (c *Cache) Put(key Key, k Kept) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key.ID]; ok {
		c.drop(el)
	}
	size := entryBytes(k)
	need := func() int {
		if _, ok := c.tenants[key.Tenant]; ok {
			return size
		}
		return size + tenantOverhead
	}
	if need() > c.maxBytes {
		return
	}
	for c.bytes+need() > c.maxBytes && len(c.byBytes) > 0 {
		c.drop(c.byBytes[0].entries.Back())
	}
	t, ok := c.tenants[key.Tenant]
	if !ok {
		t = &tenantTotals{id: key.Tenant}
		c.tenants[key.Tenant] = t
		heap.Push(&c.byBytes, t)
		c.bytes += tenantOverhead
	}
	c.items[key.ID] = t.entries.PushFront(&keptEntry{id: key.ID, tenant: t, kept: k, bytes: size})
	t.bytes += size
	c.bytes += size
	heap.Fix(&c.byBytes, t.index)
}

// drop removes the entry el, and its tenant when it was the last.
func (c *Cache) drop(el *list.Element) {
	e := el.Value.(*keptEntry)
	t := e.tenant
	t.entries.Remove(el)
	delete(c.items, e.id)
	t.bytes -= e.bytes
	c.bytes -= e.bytes
	if t.entries.Len() == 0 {
		heap.Remove(&c.byBytes, t.index)
		delete(c.tenants, t.id)
		c.bytes -= tenantOverhead
		return
	}
	heap.Fix(&c.byBytes, t.index)
}

// buffer returns a buffer to render a key's statements into; release
// returns it.
func (c *Cache) buffer() *[]byte {
	if b, ok := c.buffers.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (c *Cache) release(b *[]byte) {
	if cap(*b) <= 1<<20 {
		c.buffers.Put(b)
	}
}

// tenantHeap orders tenants by the bytes they hold, the most first
// (container/heap).
type tenantHeap []*tenantTotals

func (h tenantHeap) Len() int           { return len(h) }
func (h tenantHeap) Less(i, j int) bool { return h[i].bytes > h[j].bytes }
func (h tenantHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *tenantHeap) Push(x any) {
	t := x.(*tenantTotals)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *tenantHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// SetMaxBytes sets the bytes the cache may hold (CacheBytes), for the
// tests that fill it with few lists.
func (c *Cache) SetMaxBytes(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxBytes = n
}

// Held returns the bytes the cache accounts for, and how many entries each
// tenant holds, by the first 4 bytes of the tenant's hash in hex.
func (c *Cache) Held() (bytes int, entries map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries = map[string]int{}
	for id, t := range c.tenants {
		entries[fmt.Sprintf("%x", id[:4])] = t.entries.Len()
	}
	return c.bytes, entries
}
