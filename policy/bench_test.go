package policy

import (
	"context"
	"sync"
	"testing"
)

// BenchmarkDecide: cold evaluates the prepared query every time (cache
// off); cached answers from the cache.
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	in := principal("subaccount", "reports").at("GET", "/reports")
	b.Run("cold", func(b *testing.B) {
		e := newEngine(b, Options{CacheSize: -1})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Decide(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		e := newEngine(b, Options{})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Decide(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkScope: cold compiles the scope every time (cache off); cached
// answers from the cache.
func BenchmarkScope(b *testing.B) {
	ctx := context.Background()
	in := principal("subaccount", "reports")
	b.Run("cold", func(b *testing.B) {
		e := newEngine(b, Options{CacheSize: -1})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Scope(ctx, in, "reports"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		e := newEngine(b, Options{})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Scope(ctx, in, "reports"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestConcurrent runs decisions and scopes from many goroutines (run with
// -race).
func TestConcurrent(t *testing.T) {
	e := newEngine(t, Options{CacheSize: 8})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				in := principal(accountTypes()[(g+i)%4], "reports")
				in.Account.ID = int64(i%5 + 1)
				if _, err := e.Decide(context.Background(), in); err != nil {
					t.Error(err)
				}
				if _, err := e.Scope(context.Background(), in, testResources[i%4]); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}
