package tenancy_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/tenancy"
)

func principal(token, account int64, ancestors ...int64) tenancy.Principal {
	p := tenancy.Principal{Token: tenancy.Token{ID: token, AccountID: account}, Account: tenancy.Account{ID: account}}
	for _, a := range ancestors {
		p.Ancestors = append(p.Ancestors, tenancy.Account{ID: a})
	}
	return p
}

func hash(i int) tenancy.TokenHash {
	h, err := tenancy.HashToken(fmt.Sprintf("flt_%032d", i))
	if err != nil {
		panic(err)
	}
	return h
}

// TestPrincipalCacheStale: a lookup that began before an invalidation of
// any kind cannot store what it read, and nothing is stored or served
// while the cache is not trusted.
func TestPrincipalCacheStale(t *testing.T) {
	now := time.Now()
	invalidations := map[string]func(c *tenancy.PrincipalCache){
		"token":          func(c *tenancy.PrincipalCache) { c.InvalidateToken(99) },
		"account":        func(c *tenancy.PrincipalCache) { c.InvalidateAccount(99) },
		"clear":          func(c *tenancy.PrincipalCache) { c.Clear() },
		"distrust_trust": func(c *tenancy.PrincipalCache) { c.Distrust(); c.Trust() },
	}
	for name, invalidate := range invalidations {
		t.Run(name, func(t *testing.T) {
			c := tenancy.NewPrincipalCache(10, time.Minute)
			c.Trust()
			epoch := c.Epoch() // the lookup begins
			invalidate(c)      // a change is applied while it runs
			if c.Add(hash(1), principal(1, 7), epoch, now) {
				t.Fatal("a lookup older than an invalidation was stored")
			}
			if c.Add(hash(1), principal(1, 7), c.Epoch(), now); !c.Contains(hash(1)) {
				t.Fatal("a lookup after the invalidation was not stored")
			}
		})
	}
	c := tenancy.NewPrincipalCache(10, time.Minute)
	if _, o := c.Get(hash(1), now); o != tenancy.CacheBypass {
		t.Fatalf("new cache: %s, want bypass (not trusted before its listener is)", o)
	}
	if c.Add(hash(1), principal(1, 7), c.Epoch(), now) {
		t.Fatal("stored while not trusted")
	}
	c.Trust()
	c.Add(hash(1), principal(1, 7), c.Epoch(), now)
	c.Distrust()
	if _, o := c.Get(hash(1), now); o != tenancy.CacheBypass || c.Contains(hash(1)) {
		t.Fatalf("after Distrust: %s, cached %v; want bypass and empty", o, c.Contains(hash(1)))
	}
	c.Trust()
	if _, o := c.Get(hash(1), now); o != tenancy.CacheMiss {
		t.Fatalf("after Trust: %s, want a miss (emptied)", o)
	}
}

// TestPrincipalCacheIndex: an account invalidation drops the principals
// of that account and of every account below it, and nothing else; a
// token invalidation drops that token only; entries older than the
// maximum age are not served.
func TestPrincipalCacheIndex(t *testing.T) {
	now := time.Now()
	c := tenancy.NewPrincipalCache(10, time.Minute)
	c.Trust()
	// manager 1 → user 2 → subaccount 3; user 4 under manager 5
	entries := []tenancy.Principal{principal(10, 1), principal(20, 2, 1), principal(30, 3, 2, 1), principal(40, 4, 5)}
	fill := func() {
		for i, p := range entries {
			c.Add(hash(i), p, c.Epoch(), now)
		}
	}
	cases := []struct {
		name string
		do   func()
		kept []bool
	}{
		{"manager", func() { c.InvalidateAccount(1) }, []bool{false, false, false, true}},
		{"user", func() { c.InvalidateAccount(2) }, []bool{true, false, false, true}},
		{"subaccount", func() { c.InvalidateAccount(3) }, []bool{true, true, false, true}},
		{"unrelated_account", func() { c.InvalidateAccount(99) }, []bool{true, true, true, true}},
		{"token", func() { c.InvalidateToken(20) }, []bool{true, false, true, true}},
		{"clear", func() { c.Clear() }, []bool{false, false, false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.Clear()
			fill()
			tc.do()
			for i, want := range tc.kept {
				if got := c.Contains(hash(i)); got != want {
					t.Errorf("principal of token %d cached %v, want %v", entries[i].Token.ID, got, want)
				}
			}
		})
	}
	c.Clear()
	fill()
	if _, o := c.Get(hash(0), now.Add(2*time.Minute)); o != tenancy.CacheMiss {
		t.Fatalf("older than the maximum age: %s, want a miss", o)
	}
}

// TestPrincipalCacheBound: the cache never holds more than its size and
// drops the least recently used first.
func TestPrincipalCacheBound(t *testing.T) {
	now := time.Now()
	c := tenancy.NewPrincipalCache(3, time.Minute)
	c.Trust()
	for i := range 3 {
		c.Add(hash(i), principal(int64(i+1), int64(i+100)), c.Epoch(), now)
	}
	c.Get(hash(0), now) // 0 is now the most recently used; 1 the least
	for i := 3; i < 6; i++ {
		c.Add(hash(i), principal(int64(i+1), int64(i+100)), c.Epoch(), now)
		if s := c.Stats(); s.Entries > 3 {
			t.Fatalf("%d entries in a cache of 3", s.Entries)
		}
		if i == 3 && (c.Contains(hash(1)) || !c.Contains(hash(0))) {
			t.Fatal("the least recently used was not the one dropped")
		}
	}
	if s := c.Stats(); s.Entries != 3 || s.Evictions != 3 {
		t.Fatalf("%+v, want 3 entries and 3 evictions", s)
	}
}

// TestPrincipalCacheTrustUntil: a cache trusted until a deadline is
// bypassed once it has passed, with nobody acting (the entries stay, and
// nothing new is stored); extending the deadline resumes it with its
// entries; a deadline never moves back; a cache that was not trusted is
// emptied when trusted again; Distrust ends it all.
func TestPrincipalCacheTrustUntil(t *testing.T) {
	now := time.Now()
	c := tenancy.NewPrincipalCache(0, time.Hour)
	c.TrustUntil(time.Now().Add(time.Hour))
	if !c.Add(hash(1), principal(1, 10), c.Epoch(), now) {
		t.Fatal("not stored in a trusted cache")
	}
	c.TrustUntil(time.Now().Add(-time.Second)) // never moves back
	if _, got := c.Get(hash(1), now); got != tenancy.CacheHit {
		t.Fatalf("after an earlier deadline: %s, want hit (a deadline never moves back)", got)
	}

	c = tenancy.NewPrincipalCache(0, time.Hour)
	c.TrustUntil(time.Now().Add(50 * time.Millisecond))
	if !c.Add(hash(1), principal(1, 10), c.Epoch(), now) {
		t.Fatal("not stored in a trusted cache")
	}
	time.Sleep(60 * time.Millisecond)
	if _, got := c.Get(hash(1), now); got != tenancy.CacheBypass {
		t.Fatalf("after the deadline: %s, want bypass", got)
	}
	if c.Add(hash(2), principal(2, 10), c.Epoch(), now) {
		t.Error("stored after the deadline")
	}
	if s := c.Stats(); s.Trusted || s.Entries != 1 {
		t.Errorf("after the deadline: %+v, want untrusted with its entry kept", s)
	}
	c.TrustUntil(time.Now().Add(time.Hour)) // a ping came back: the entries are current
	if _, got := c.Get(hash(1), now); got != tenancy.CacheHit {
		t.Fatalf("after the extension: %s, want hit", got)
	}
	c.Distrust()
	c.TrustUntil(time.Now().Add(time.Hour))
	if s := c.Stats(); !s.Trusted || s.Entries != 0 {
		t.Errorf("trusted again after Distrust: %+v, want trusted and empty", s)
	}
}
