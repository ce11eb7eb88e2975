package policy

import (
	"context"
	"os"
	"path/filepath"
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

// BenchmarkReload measures one hot reload of a changed policy directory:
// read, compile, prepare, verify every scope rule for every account type,
// run the set's own tests, swap. It alternates between the embedded set
// and a narrowed one (narrowSet), so every iteration swaps.
func BenchmarkReload(b *testing.B) {
	ctx := context.Background()
	dirA, dirB := copyPolicy(b), copyPolicy(b)
	narrowSet(b, dirB)
	files := func(dir string) map[string][]byte {
		out := map[string][]byte{}
		for _, f := range []string{"fleet/scope/scope.rego", "fleet/authz/authz.rego", "fleet/scope/scope_test.rego", "fleet/authz/authz_test.rego"} {
			out[f], _ = os.ReadFile(filepath.Join(dir, f)) // nil when absent
		}
		return out
	}
	a, nb := files(dirA), files(dirB)
	dir := copyPolicy(b)
	e := newEngine(b, Options{Dir: dir, Schema: ResourceList(testResources)})
	install := func(set map[string][]byte) {
		for f, content := range set {
			p := filepath.Join(dir, f)
			if content == nil {
				_ = os.Remove(p)
				continue
			}
			writeFileAtomic(b, p, content)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if i%2 == 0 {
			install(nb)
		} else {
			install(a)
		}
		b.StartTimer()
		res, err := e.Reload(ctx, "bench")
		if err != nil || !res.Changed {
			b.Fatalf("reload: %+v %v", res, err)
		}
	}
}
