package storage

import (
	"container/heap"
	"container/list"
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// The kept totals' cache (totals.go; docs/decisions.md, "Kept totals are
// bounded by bytes and shared fairly between tenants"). Bounded by the
// bytes its entries hold, not by their number: an entry is a key (a hash),
// a version, a total and up to keptIDsMax ids. Each entry belongs to a
// tenant, the scope it was counted for, and the cache makes room by
// dropping the least recently used entry of the tenant that holds the
// most bytes: a tenant that lists many distinct filters or terms evicts
// its own entries once it holds more than the others, and a tenant that
// holds no more than any other loses none to it.

// totalsCacheBytes bounds the bytes the kept totals of a Store (and of
// its replica Stores) hold together: entries, their ids and their
// tenants, as entryBytes and tenantBytes account them.
const totalsCacheBytes = 24 << 20

// Accounted sizes (TestTotalsCacheHeldBytes checks them against the heap
// an entry really holds): an entry's fixed part — the map entry, the list
// element, the keptEntry and its version — and a tenant's.
const (
	entryOverhead  = 256
	tenantOverhead = 192
)

// totalKey is where a total is kept: id, the hash of everything the
// total depends on (Store.totalKey), and tenant, the hash of the scope it
// was counted for. SHA-256, so that no two statements share an entry, a
// tenant's chosen filter values included: a collision would need one of
// SHA-256.
type totalKey struct {
	id, tenant [sha256.Size]byte
}

// totalsCache keeps, per count query (the scope, the filters and the
// search, rendered with their values and hashed: totalKey), the total
// counted and the version of the scope it was counted at. It is shared by
// the Stores made from one (its replicas under keys of their own,
// Store.server: a version holds its server). A nil *totalsCache keeps
// nothing.
type totalsCache struct {
	mu      sync.Mutex
	items   map[[sha256.Size]byte]*list.Element
	tenants map[[sha256.Size]byte]*tenantTotals
	// byBytes orders the tenants that hold entries, the most bytes first.
	byBytes tenantHeap
	// bytes is what the entries and tenants hold (entryBytes,
	// tenantOverhead); maxBytes bounds it (totalsCacheBytes; the tests
	// lower it).
	bytes, maxBytes int
	// maxIDs is the most ids kept with one total (keptIDsMax; the tests
	// lower it).
	maxIDs int64
	// buffers are reused to render the statements a key is hashed from.
	buffers sync.Pool
	// flight runs one count per (key, version, with or without ids) at a
	// time.
	flight singleflight.Group
	// counted counts the totals counted (no entry, or a stale one);
	// reused the totals answered from an entry or from a count another
	// request was running.
	counted, reused atomic.Int64
}

// keptEntry is one kept total, an element of its tenant's list.
type keptEntry struct {
	id     [sha256.Size]byte
	tenant *tenantTotals
	kept   keptTotal
	bytes  int
}

// tenantTotals are the entries of one tenant, the most recently used
// first, and the bytes they hold.
type tenantTotals struct {
	id      [sha256.Size]byte
	entries list.List
	bytes   int
	// index is its place in totalsCache.byBytes.
	index int
}

func newTotalsCache() *totalsCache {
	return &totalsCache{items: map[[sha256.Size]byte]*list.Element{}, tenants: map[[sha256.Size]byte]*tenantTotals{},
		maxBytes: totalsCacheBytes, maxIDs: keptIDsMax}
}

// entryBytes is what an entry keeping k accounts for: its fixed part,
// the version's text and the ids' backing array.
func entryBytes(k keptTotal) int {
	return entryOverhead + len(k.version.started) + 8*cap(k.ids)
}

// get returns the total kept under id, which becomes its tenant's most
// recently used.
func (c *totalsCache) get(id [sha256.Size]byte) (keptTotal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[id]
	if !ok {
		return keptTotal{}, false
	}
	e := el.Value.(*keptEntry)
	e.tenant.entries.MoveToFront(el)
	return e.kept, true
}

// put keeps k under key, replacing what key held. To stay within
// maxBytes it first drops the least recently used entries of the tenant
// that holds the most bytes, the key's own tenant included: a miss costs
// one count, as without the cache. An entry larger than the whole budget
// is not kept.
func (c *totalsCache) put(key totalKey, k keptTotal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key.id]; ok {
		c.drop(el)
	}
	size := entryBytes(k)
	need := func() int {
		if _, ok := c.tenants[key.tenant]; ok {
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
	t, ok := c.tenants[key.tenant]
	if !ok {
		t = &tenantTotals{id: key.tenant}
		c.tenants[key.tenant] = t
		heap.Push(&c.byBytes, t)
		c.bytes += tenantOverhead
	}
	c.items[key.id] = t.entries.PushFront(&keptEntry{id: key.id, tenant: t, kept: k, bytes: size})
	t.bytes += size
	c.bytes += size
	heap.Fix(&c.byBytes, t.index)
}

// drop removes the entry el, and its tenant when it was the last.
func (c *totalsCache) drop(el *list.Element) {
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
func (c *totalsCache) buffer() *[]byte {
	if b, ok := c.buffers.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (c *totalsCache) release(b *[]byte) {
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
