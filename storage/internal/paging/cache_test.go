package paging

import (
	"crypto/sha256"
	"fmt"
	"runtime"
	"testing"
)

// testKey is the key of entry n of tenant: distinct hashes, as
// Store.Key makes them.
func testKey(tenant string, n int) Key {
	return Key{ID: sha256.Sum256(fmt.Appendf(nil, "%s/%d", tenant, n)), Tenant: sha256.Sum256([]byte(tenant))}
}

// started is a version's server start time as PostgreSQL writes it.
const testStarted = "2027-02-03 10:11:12.345678+00"

// checkHeld fails unless c's accounted bytes are the sum of its entries'
// and tenants', within the budget, and every tenant's bytes are its
// entries'.
func checkHeld(t *testing.T, c *Cache, when string) {
	t.Helper()
	sum := 0
	for _, tn := range c.tenants {
		own := 0
		for el := tn.entries.Front(); el != nil; el = el.Next() {
			own += el.Value.(*keptEntry).bytes
		}
		if own != tn.bytes || tn.entries.Len() == 0 {
			t.Fatalf("%s: a tenant accounts %d bytes for %d entries holding %d", when, tn.bytes, tn.entries.Len(), own)
		}
		sum += own + tenantOverhead
	}
	if sum != c.bytes || c.bytes > c.maxBytes || len(c.byBytes) != len(c.tenants) {
		t.Fatalf("%s: %d bytes accounted, %d held, budget %d; %d tenants, %d in the heap", when, c.bytes, sum, c.maxBytes, len(c.tenants), len(c.byBytes))
	}
}

// entriesOf counts the entries tenant holds in c.
func entriesOf(c *Cache, tenant string) int {
	if tn, ok := c.tenants[sha256.Sum256([]byte(tenant))]; ok {
		return tn.entries.Len()
	}
	return 0
}

// TestTotalsCacheBytes (issue 34 item 8): the kept totals hold at most
// their budget of bytes, ids included, and every byte is accounted to an
// entry and its tenant; an entry kept again under its key replaces it; the
// least recently used entry of a tenant goes first.
func TestTotalsCacheBytes(t *testing.T) {
	c := NewCache()
	c.maxBytes = 64 << 10
	ids := func(n int) []int64 { return make([]int64, n) }
	third := c.maxBytes / 3 / 8 // two entries of these ids fit, three do not
	for i := range 5 {
		c.Put(testKey("a", i), Kept{Version: Version{Started: testStarted}, Total: int64(third), IDs: ids(third)})
		checkHeld(t, c, fmt.Sprintf("after %d entries of %d ids", i+1, third))
		if _, ok := c.Get(testKey("a", i).ID); !ok {
			t.Fatalf("the entry just kept (%d) was dropped", i)
		}
	}
	if n := entriesOf(c, "a"); n != 2 {
		t.Errorf("%d entries of %d ids each within %d bytes, want 2", n, third, c.maxBytes)
	}
	// The same key again: its old ids go first, nothing else needs to.
	c.Put(testKey("a", 4), Kept{Total: 3, IDs: ids(3)})
	checkHeld(t, c, "after replacing an entry")
	if n := entriesOf(c, "a"); n != 2 {
		t.Errorf("after replacing an entry: %d entries, want 2", n)
	}
	// An entry larger than the budget is not kept, and drops nothing.
	c.Put(testKey("a", 99), Kept{Total: 1, IDs: ids(c.maxBytes / 8)})
	if _, ok := c.Get(testKey("a", 99).ID); ok || entriesOf(c, "a") != 2 {
		t.Errorf("an entry over the budget: kept %t, %d entries", ok, entriesOf(c, "a"))
	}
	// Least recently used first: of two full entries, the one read last
	// survives the next put, the other goes.
	c = NewCache()
	c.maxBytes = 64 << 10
	for i := range 2 {
		c.Put(testKey("a", i), Kept{Total: int64(third), IDs: ids(third)})
	}
	c.Get(testKey("a", 0).ID)
	c.Put(testKey("a", 2), Kept{Total: int64(third), IDs: ids(third)})
	checkHeld(t, c, "after a read")
	if _, ok := c.Get(testKey("a", 0).ID); !ok {
		t.Error("the most recently read entry was dropped")
	}
	if _, ok := c.Get(testKey("a", 1).ID); ok {
		t.Error("the least recently used entry was kept over the most recently read one")
	}
}

// TestTotalsCachePerTenant (issue 34 item 8): one tenant listing 10,000
// distinct filters evicts only its own entries once the cache is full: the
// entries of eight other tenants, each holding less than it, are all still
// there, and it holds what the budget leaves it. A tenant that then grows
// past the others gives way in turn.
func TestTotalsCachePerTenant(t *testing.T) {
	c := NewCache()
	c.maxBytes = 64 << 10
	small := Kept{Version: Version{Started: testStarted}, Total: 7}
	others := []string{"b", "c", "d", "e", "f", "g", "h", "i"}
	for _, o := range others {
		for i := range 4 {
			c.Put(testKey(o, i), small)
		}
	}
	for i := range 10_000 {
		c.Put(testKey("flood", i), small)
	}
	checkHeld(t, c, "after the flood")
	for _, o := range others {
		if n := entriesOf(c, o); n != 4 {
			t.Errorf("tenant %s holds %d of its 4 entries after another's flood", o, n)
		}
	}
	held := len(others)*(4*entryBytes(small)+tenantOverhead) + tenantOverhead
	room := (c.maxBytes - held) / entryBytes(small)
	if n := entriesOf(c, "flood"); n != room {
		t.Errorf("the flooding tenant holds %d entries, want the %d the budget leaves", n, room)
	}
	if _, ok := c.Get(testKey("flood", 9_999).ID); !ok {
		t.Error("the flooding tenant's last entry was dropped")
	}
	if _, ok := c.Get(testKey("flood", 0).ID); ok {
		t.Error("the flooding tenant's first entry was kept over its last")
	}
	// A tenant with more bytes than the flooder gives way to the flooder's
	// next entries, and only it does.
	big := Kept{Version: Version{Started: testStarted}, Total: 100, IDs: make([]int64, 100)}
	bytesOf := func(tenant string) int {
		if tn, ok := c.tenants[sha256.Sum256([]byte(tenant))]; ok {
			return tn.bytes
		}
		return 0
	}
	for i := 0; bytesOf("b") <= bytesOf("flood"); i++ {
		if i == 1000 {
			t.Fatalf("b holds %d bytes after %d entries of %d, the flooder %d", bytesOf("b"), i, entryBytes(big), bytesOf("flood"))
		}
		c.Put(testKey("b", 100+i), big)
	}
	before := map[string]int{}
	for _, o := range others {
		before[o] = entriesOf(c, o)
	}
	c.Put(testKey("flood", 10_000), small)
	checkHeld(t, c, "after b grew")
	if entriesOf(c, "b") >= before["b"] {
		t.Errorf("the largest tenant (b) kept all %d entries", before["b"])
	}
	for _, o := range others[1:] {
		if entriesOf(c, o) != before[o] {
			t.Errorf("tenant %s lost an entry while b held more than it", o)
		}
	}
}

// TestTotalsCacheHeldBytes: what an entry accounts for (entryBytes,
// tenantOverhead) is at least the heap it holds, measured with
// runtime.MemStats over 20,000 entries of 200 tenants, so that the byte
// budget bounds the memory. It logs the heap per entry (docs/performance.md,
// "Kept totals' memory").
func TestTotalsCacheHeldBytes(t *testing.T) {
	const entries, tenants = 20_000, 200
	keys := make([]Key, entries)
	for i := range keys {
		keys[i] = testKey(fmt.Sprintf("tenant-%d", i%tenants), i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := NewCache()
	for i, k := range keys {
		// the started text is read from the database, one string each
		c.Put(k, Kept{Version: Version{Started: string([]byte(testStarted)), Generation: 1, Changes: int64(i)}, Total: int64(i)})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	held := int(after.HeapAlloc) - int(before.HeapAlloc)
	t.Logf("%d entries of %d tenants: %d bytes of heap, %d a entry; accounted %d, %d a entry", entries, tenants, held, held/entries, c.bytes, c.bytes/entries)
	if len(c.items) != entries {
		t.Fatalf("%d entries kept, want %d", len(c.items), entries)
	}
	if held > c.bytes {
		t.Errorf("the entries hold %d bytes of heap, more than the %d accounted", held, c.bytes)
	}
}
