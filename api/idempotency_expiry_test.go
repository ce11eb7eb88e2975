package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// TestIdempotencyKeysExpire: a stored response is replayed for
// storage.IdempotencyKeyTTL (24 h) and no longer: on every route that
// takes a key, a retry within the day is replayed (and another body with
// the key is 409), the same retry once the key is older than a day is a
// new request (a new row, 201 without Idempotent-Replayed), and so is
// another body with the expired key (not 409); the retry right after
// that is replayed again. The purge deletes expired keys and keeps the
// others.
func TestIdempotencyKeysExpire(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	acme := a.accountID(t, "acme")
	tok := demoToken(t, "acme-all")
	routes := []struct {
		path, id string
		body     func(n int) string
	}{
		{"/api/v2/passengers", "passenger_id", func(n int) string { return fmt.Sprintf(`{"passenger_name":"Expiry %d"}`, n) }},
		{"/api/v2/tokens", "id", func(n int) string { return fmt.Sprintf(`{"name":"expiry-%d","permissions":["GET /me"]}`, n) }},
		{"/api/v2/objects", "id", func(n int) string { return fmt.Sprintf(`{"imei":"EXPIRY-%d","account_id":%d}`, n, acme) }},
		{"/api/v2/accounts", "id", func(n int) string {
			return fmt.Sprintf(`{"username":"expiry-%d","type":"subaccount","manager_id":%d}`, n, acme)
		}},
	}
	age := func(key string, by time.Duration) {
		t.Helper()
		a.exec(t, "UPDATE idempotency_keys SET created_at = created_at - ? * interval '1 microsecond' WHERE key = ?", by.Microseconds(), key)
	}
	for i, r := range routes {
		t.Run(r.path, func(t *testing.T) {
			key := "expiry" + r.path
			send := func(n int) response {
				t.Helper()
				res := a.send(http.MethodPost, r.path, tok, r.body(n), "Idempotency-Key", key)
				if res.status != http.StatusCreated && res.status != http.StatusConflict {
					t.Fatalf("%d %s", res.status, res.raw)
				}
				return res
			}
			replayed := func(res response) bool { return res.header.Get("Idempotent-Replayed") == "true" }
			n := 10 * i
			first := send(n)
			age(key, storage.IdempotencyKeyTTL-time.Minute)
			if again := send(n); !replayed(again) || again.data(t)[r.id] != first.data(t)[r.id] {
				t.Fatalf("a retry within the day: %s", again.raw)
			}
			if other := send(n + 1); other.status != http.StatusConflict {
				t.Fatalf("another body within the day: %d %s", other.status, other.raw)
			}
			age(key, 2*time.Minute)
			// Expired: another body is a new request, then replayed.
			fresh := send(n + 2)
			if fresh.status != http.StatusCreated || replayed(fresh) || fresh.data(t)[r.id] == first.data(t)[r.id] {
				t.Fatalf("another body with an expired key: %d %s", fresh.status, fresh.raw)
			}
			if again := send(n + 2); !replayed(again) || again.data(t)[r.id] != fresh.data(t)[r.id] {
				t.Fatalf("the retry of the new request: %s", again.raw)
			}
			// Expired again: the first body is a new request too — a second
			// passenger, or a conflict with the row it made the first time.
			age(key, storage.IdempotencyKeyTTL+time.Minute)
			again := send(n)
			if replayed(again) || again.status == http.StatusCreated && again.data(t)[r.id] == first.data(t)[r.id] ||
				again.status == http.StatusConflict && again.errorCode(t) != "CONFLICT" {
				t.Fatalf("the first body after a day: %d %s", again.status, again.raw)
			}
		})
	}

	// Concurrent retries with an expired key: exactly one takes it over and
	// creates; every other one waits for it and is replayed its answer.
	key := "expiry-race"
	if r := a.send(http.MethodPost, "/api/v2/passengers", tok, `{"passenger_name":"Race 0"}`, "Idempotency-Key", key); r.status != http.StatusCreated {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	age(key, storage.IdempotencyKeyTTL)
	var wg sync.WaitGroup
	results := make([]response, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = a.send(http.MethodPost, "/api/v2/passengers", tok, `{"passenger_name":"Race 1"}`, "Idempotency-Key", key)
		}()
	}
	wg.Wait()
	ids, fresh := map[any]bool{}, 0
	for _, r := range results {
		if r.status != http.StatusCreated {
			t.Fatalf("a concurrent retry: %d %s", r.status, r.raw)
		}
		ids[r.data(t)["passenger_id"]] = true
		if r.header.Get("Idempotent-Replayed") != "true" {
			fresh++
		}
	}
	if fresh != 1 || len(ids) != 1 {
		t.Errorf("concurrent retries with an expired key: %d not replayed, %d passengers; want 1 and 1", fresh, len(ids))
	}
	a.exec(t, "DELETE FROM idempotency_keys WHERE key = ?", key)

	// One key per route is left: a 409 rolls its take-over back, and the
	// expired row stays until the purge.
	var keys int
	count := func() int {
		t.Helper()
		if err := a.db.NewRaw("SELECT count(*) FROM idempotency_keys").Scan(ctx, &keys); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if count() != len(routes) {
		t.Fatalf("%d keys, want %d", keys, len(routes))
	}
	a.exec(t, "UPDATE idempotency_keys SET created_at = now() WHERE key <> 'expiry/api/v2/objects'")
	purged, err := a.store.Purge(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if purged.IdempotencyKeys != 1 || count() != len(routes)-1 {
		t.Errorf("purge: %+v, %d keys left, want 1 purged and %d left", purged, keys, len(routes)-1)
	}
}
