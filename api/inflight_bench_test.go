package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
)

// BenchmarkTenantFlood measures what one tenant's flood of writes on its
// own account does to another tenant's reads (docs/performance.md,
// "A tenant's flood and another tenant's reads"): a server with the
// default pool (16 connections), globex reading GET /services one at a
// time, idle and then while acme sends 32 keyed POST /objects on its own
// account at once without pause (they queue on acme's row: the lock order
// serialises one account's management writes, and each waiting write
// holds a connection). Without a bound (bound=0) the flood holds the
// whole pool; with the default bound (bound=4) acme holds 4 connections
// and its other requests wait for a slot, then 429. It reports globex's
// p50 and p90, idle and flooded, and the flood's answers. Run it once:
//
//	go test -run '^$' -bench BenchmarkTenantFlood -benchtime 1x ./api/
func BenchmarkTenantFlood(b *testing.B) {
	for _, bound := range []int{0, 2, 4} {
		b.Run(fmt.Sprintf("bound=%d", bound), func(b *testing.B) {
			a := newTestAPIWith(b, func(c *api.Config) { c.RateLimit = 1_000_000 })
			name := fmt.Sprintf("flood-%d", bound)
			srv, pool := poolServer(b, a, name, 16, func(c *api.Config) { c.TenantMaxInFlight = bound })
			defer closePairServers(b, a, []string{name}, pool)
			acme, globex := demoToken(b, "acme-all"), demoToken(b, "globex-read")
			var acmeID int64
			if err := a.db.NewRaw("SELECT id FROM accounts WHERE username = 'acme'").Scan(b.Context(), &acmeID); err != nil {
				b.Fatal(err)
			}
			serve := func(method, path, token, body string, headers ...string) int {
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				for i := 0; i+1 < len(headers); i += 2 {
					req.Header.Set(headers[i], headers[i+1])
				}
				rec := httptest.NewRecorder()
				srv.handler.ServeHTTP(rec, req)
				return rec.Code
			}
			reads := func(n int) []time.Duration {
				out := make([]time.Duration, n)
				for i := range out {
					start := time.Now()
					if code := serve(http.MethodGet, "/api/v2/services", globex, ""); code != http.StatusOK {
						b.Fatalf("globex's read: %d", code)
					}
					out[i] = time.Since(start)
				}
				slices.Sort(out)
				return out
			}
			reads(20) // warm
			idle := reads(200)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var sent atomic.Int64
			var mu sync.Mutex
			answers := map[int]int{}
			for w := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						key := fmt.Sprintf("flood-%d-%d-%d", bound, w, i)
						code := serve(http.MethodPost, "/api/v2/objects", acme, fmt.Sprintf(`{"imei":%q,"account_id":%d}`, key, acmeID),
							"Idempotency-Key", key)
						sent.Add(1)
						mu.Lock()
						answers[code]++
						mu.Unlock()
					}
				}()
			}
			for sent.Load() < 64 {
				time.Sleep(time.Millisecond)
			}
			flooded := reads(200)
			close(stop)
			wg.Wait()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(ms(idle[len(idle)/2]), "idle-p50-ms")
			b.ReportMetric(ms(idle[len(idle)*9/10]), "idle-p90-ms")
			b.ReportMetric(ms(flooded[len(flooded)/2]), "flood-p50-ms")
			b.ReportMetric(ms(flooded[len(flooded)*9/10]), "flood-p90-ms")
			b.ReportMetric(float64(flooded[len(flooded)/2])/float64(idle[len(idle)/2]), "p50-ratio")
			b.Logf("acme's flood: %v", answers)
			for code, n := range answers {
				if code >= 500 {
					b.Errorf("the flood got %d × %d", n, code)
				}
			}
		})
	}
}
