package api_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestAPIDatabasePooling: the API of the tests reaches PostgreSQL through
// transaction pooling exactly when the PgBouncer mode is on (.ci/run's
// second pass), so that pass cannot silently bypass the pooler; and under
// load, with more clients than the pooler has server connections, every
// read answers 200 and every idempotent create stores one row however its
// transactions are spread over the server backends.
func TestAPIDatabasePooling(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	pooled, err := storagetest.TransactionPooled(ctx, a.db.DB)
	if err != nil {
		t.Fatal(err)
	}
	if pooled != storagetest.PgBouncerMode() {
		t.Fatalf("transaction pooled = %v, but %s=%q", pooled, storagetest.PgBouncerEnv, os.Getenv(storagetest.PgBouncerEnv))
	}

	tok := demoToken(t, "acme-all")
	reads := []string{"/api/v2/me", "/api/v2/services?per_page=5&sort=name", "/api/v2/reports?search=da", "/api/v2/events", "/api/v2/services/due", "/api/v2/tokens"}
	const clients, perClient = 16, 12
	results := make([][]loadResult, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				if i%3 == 2 {
					// Each create is sent twice with its key: the replay
					// finds the first one's claim wherever it ran.
					key := fmt.Sprintf("pool-%d-%d", c, i)
					body := `{"passenger_name":"` + key + `"}`
					for range 2 {
						r := sendRaw(a.handler, http.MethodPost, "/api/v2/passengers", tok, body, "Idempotency-Key", key)
						r.key = key
						results[c] = append(results[c], r)
					}
					continue
				}
				results[c] = append(results[c], sendRaw(a.handler, http.MethodGet, reads[(c+i)%len(reads)], tok, ""))
			}
		}()
	}
	wg.Wait()
	for _, rs := range results {
		for _, r := range rs {
			want := http.StatusOK
			if r.key != "" {
				want = http.StatusCreated
			}
			if r.status != want {
				t.Errorf("%s %s: %d, want %d: %s", r.method, r.path, r.status, want, r.raw)
			}
			if r.key != "" {
				var n int
				if err := a.db.NewRaw("SELECT count(*) FROM passengers WHERE passenger_name = ?", r.key).Scan(ctx, &n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Errorf("create %s: %d rows, want 1", r.key, n)
				}
			}
		}
	}
}
