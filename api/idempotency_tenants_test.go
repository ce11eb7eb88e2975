package api_test

import (
	"fmt"
	"net/http"
	"testing"
)

// TestIdempotencyKeysAcrossTenants: an Idempotency-Key is the caller's own.
// For every route that takes one, tenant B (tailspin) uses key K first,
// then tenant A (acme) creates with the same K — with the same body where
// the route allows it — and retries: A gets its own first response back
// (its id, its account), never B's; B's retry still gets B's. It guards the
// account filter of the key lookup (storage claimKey, issue 25 item 1).
func TestIdempotencyKeysAcrossTenants(t *testing.T) {
	a := newTestAPI(t)
	acme, tailspin := a.accountID(t, "acme"), a.accountID(t, "tailspin")
	tokA, tokB := demoToken(t, "acme-all"), demoToken(t, "tailspin-all")
	routes := []struct {
		path  string
		id    string // the id field of the created record
		owner string // the field naming the owning account, "" when the record has none
		body  func(tenant int64, n string) string
	}{
		{"/api/v2/passengers", "passenger_id", "", func(int64, string) string {
			return `{"passenger_name":"Same Body","passenger_assign_id":"IDEM-X"}`
		}},
		{"/api/v2/tokens", "id", "account_id", func(int64, string) string {
			return `{"name":"same-body","permissions":["GET /me"]}`
		}},
		{"/api/v2/objects", "id", "account_id", func(tenant int64, n string) string {
			return fmt.Sprintf(`{"imei":"IDEM-%s","name":"Same","account_id":%d}`, n, tenant)
		}},
		{"/api/v2/accounts", "id", "manager_id", func(tenant int64, n string) string {
			return fmt.Sprintf(`{"username":"idem-sub-%s","email":"sub@idem.example","type":"subaccount","manager_id":%d}`, n, tenant)
		}},
	}
	for _, r := range routes {
		t.Run(r.path, func(t *testing.T) {
			key := "shared-key-K" + r.path // a key is also bound to its route
			create := func(tok string, tenant int64, n string) response {
				return a.send(http.MethodPost, r.path, tok, r.body(tenant, n), "Idempotency-Key", key)
			}
			check := func(what string, res response, wantID any, tenant int64) {
				t.Helper()
				if res.status != http.StatusCreated {
					t.Fatalf("%s: %d %s", what, res.status, res.raw)
				}
				d := res.data(t)
				if wantID != nil && d[r.id] != wantID {
					t.Fatalf("%s: %s %v, want %v (another tenant's response?): %s", what, r.id, d[r.id], wantID, res.raw)
				}
				if r.owner != "" && d[r.owner] != float64(tenant) {
					t.Fatalf("%s: %s %v, want %d: %s", what, r.owner, d[r.owner], tenant, res.raw)
				}
			}
			first := create(tokB, tailspin, "b")
			check("B's create", first, nil, tailspin)
			bID := first.data(t)[r.id]
			mine := create(tokA, acme, "a")
			check("A's create with B's key", mine, nil, acme)
			aID := mine.data(t)[r.id]
			if aID == bID {
				t.Fatalf("A's create answered B's record %v", bID)
			}
			retry := create(tokA, acme, "a")
			check("A's retry", retry, aID, acme)
			if retry.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("A's retry was not a replay: %s", retry.raw)
			}
			check("B's retry", create(tokB, tailspin, "b"), bID, tailspin)
			if r.path == "/api/v2/passengers" {
				if n := a.count(t, `SELECT count(*) FROM passengers WHERE passenger_assign_id = 'IDEM-X' AND account_id = ?`, acme); n != 1 {
					t.Fatalf("acme holds %d passengers IDEM-X, want 1", n)
				}
			}
		})
	}
}
