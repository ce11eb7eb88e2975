package storage

import "testing"

// TestKeptIDsBudget checks that the kept totals never hold more than
// keptIDsBudget ids together: a new entry makes room by dropping others,
// an entry kept again under its key replaces its ids, and the count of ids
// held stays the sum of the entries' ids.
func TestKeptIDsBudget(t *testing.T) {
	c := newTotalsCache()
	ids := func(n int) []int64 { return make([]int64, n) }
	held := func() int {
		sum := 0
		for _, e := range c.items {
			sum += len(e.ids)
		}
		return sum
	}
	third := keptIDsBudget/3 + 1
	for i, key := range []string{"a", "b", "c", "d", "e"} {
		c.put(key, keptTotal{total: int64(third), ids: ids(third)})
		if c.ids != held() || c.ids > keptIDsBudget {
			t.Fatalf("after %d puts: %d ids counted, %d held, budget %d", i+1, c.ids, held(), keptIDsBudget)
		}
		if _, ok := c.items[key]; !ok {
			t.Fatalf("the entry just kept (%s) was dropped", key)
		}
	}
	if len(c.items) != 2 {
		t.Errorf("%d entries of %d ids each within a budget of %d, want 2", len(c.items), third, keptIDsBudget)
	}
	// The same key again: its old ids go first, nothing else needs to.
	for key := range c.items {
		c.put(key, keptTotal{total: 3, ids: ids(3)})
		break
	}
	if len(c.items) != 2 || c.ids != held() || c.ids != third+3 {
		t.Errorf("after replacing an entry: %d entries, %d ids counted, %d held; want 2 entries, %d ids", len(c.items), c.ids, held(), third+3)
	}
	// Totals without ids fill the cache up to its count bound.
	for i := range totalsCacheSize + 10 {
		c.put(string(rune('A'+i%26))+string(rune(i)), keptTotal{total: 1})
	}
	if len(c.items) > totalsCacheSize || c.ids != held() {
		t.Errorf("%d entries (bound %d), %d ids counted, %d held", len(c.items), totalsCacheSize, c.ids, held())
	}
}
