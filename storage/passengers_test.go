package storage_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
)

func TestCreatePassenger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	acme := principalOf(t, s, "acme").Account
	globex := principalOf(t, s, "globex").Account
	scope := scopeOf(t, e, s, "acme", "passengers")
	idem := func(key, body string) *storage.IdempotentRequest {
		h := sha256.Sum256([]byte(body))
		return &storage.IdempotentRequest{AccountID: acme.ID, Key: key, RequestHash: h[:]}
	}
	count := func(t *testing.T, table, where string, args ...any) int {
		t.Helper()
		n, err := db.NewSelect().Table(table).Where(where, args...).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}

	t.Run("created", func(t *testing.T) {
		p, replayed, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "  Zoe Park ", PassengerAssignID: " zp-1 ", PassengerActive: true}, nil)
		if err != nil || replayed {
			t.Fatalf("err %v, replayed %v", err, replayed)
		}
		if p.PassengerID == 0 || p.AccountID != acme.ID || p.PassengerName != "Zoe Park" || p.PassengerAssignID != "ZP-1" ||
			!p.PassengerActive || p.PassengerEmail != "" || p.PassengerPickupPointID != nil || p.CreatedAt.IsZero() {
			t.Fatalf("got %+v", p)
		}
		if n := count(t, "passengers", "passenger_id = ? AND account_id = ?", p.PassengerID, acme.ID); n != 1 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		_, _, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "  ", PassengerEmail: "x"}, nil)
		if !errors.Is(err, storage.ErrInvalid) {
			t.Fatalf("got %v, want ErrInvalid", err)
		}
	})
	t.Run("duplicate assign id conflicts and writes nothing", func(t *testing.T) {
		before := count(t, "passengers", "TRUE")
		_, _, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Ana Again", PassengerAssignID: "ab-1001"}, idem("dup", "ana"))
		if !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("got %v, want ErrConflict", err)
		}
		if n := count(t, "passengers", "TRUE"); n != before {
			t.Fatalf("%d passengers, want %d", n, before)
		}
		if n := count(t, "idempotency_keys", "key = 'dup'"); n != 0 {
			t.Fatalf("a failed create left %d key rows", n)
		}
		// The key is free again: a retry with a fixed body runs.
		if _, replayed, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Ana Again", PassengerAssignID: "ab-1009"}, idem("dup", "ana2")); err != nil || replayed {
			t.Fatalf("retry: err %v, replayed %v", err, replayed)
		}
	})
	t.Run("same key and body replays", func(t *testing.T) {
		first, replayed, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Yuki Sato", PassengerPhone: "+1"}, idem("k1", "yuki"))
		if err != nil || replayed {
			t.Fatalf("first: err %v, replayed %v", err, replayed)
		}
		again, replayed, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Yuki Sato", PassengerPhone: "+1"}, idem("k1", "yuki"))
		if err != nil || !replayed {
			t.Fatalf("replay: err %v, replayed %v", err, replayed)
		}
		if again.PassengerID != first.PassengerID || again.PassengerName != "Yuki Sato" || again.PassengerPhone != "+1" || again.AccountID != acme.ID {
			t.Fatalf("replay %+v, first %+v", again, first)
		}
		if n := count(t, "passengers", "passenger_name = 'Yuki Sato'"); n != 1 {
			t.Fatalf("%d rows", n)
		}
		if n := count(t, "idempotency_keys", "account_id = ? AND key = 'k1' AND status = 201 AND (response->>'passenger_id')::bigint = ?", acme.ID, first.PassengerID); n != 1 {
			t.Fatalf("stored response: %d matching key rows", n)
		}
	})
	t.Run("same key other body", func(t *testing.T) {
		_, _, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Other"}, idem("k1", "other"))
		if !errors.Is(err, storage.ErrIdempotencyKeyReused) {
			t.Fatalf("got %v, want ErrIdempotencyKeyReused", err)
		}
		if n := count(t, "passengers", "passenger_name = 'Other'"); n != 0 {
			t.Fatalf("%d rows", n)
		}
	})
	t.Run("keys are per account", func(t *testing.T) {
		other := idem("k1", "yuki")
		other.AccountID = globex.ID
		p, replayed, err := s.CreatePassenger(ctx, scopeOf(t, e, s, "globex", "passengers"), globex.ID, storage.Passenger{PassengerName: "Yuki Sato"}, other)
		if err != nil || replayed || p.AccountID != globex.ID {
			t.Fatalf("err %v, replayed %v, %+v", err, replayed, p)
		}
	})
	t.Run("concurrent same key creates once", func(t *testing.T) {
		const n = 20
		var wg sync.WaitGroup
		got := make([]int64, n)
		errs := make([]error, n)
		replays := make([]bool, n)
		for i := range n {
			wg.Go(func() {
				p, replayed, err := s.CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "Racer", PassengerAssignID: "race-1"}, idem("race", "racer"))
				got[i], errs[i], replays[i] = p.PassengerID, err, replayed
			})
		}
		wg.Wait()
		created := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("goroutine %d: %v", i, errs[i])
			}
			if got[i] != got[0] {
				t.Fatalf("goroutine %d got passenger %d, goroutine 0 got %d", i, got[i], got[0])
			}
			if !replays[i] {
				created++
			}
		}
		if created != 1 {
			t.Errorf("%d goroutines created, want 1", created)
		}
		if c := count(t, "passengers", "passenger_assign_id = 'RACE-1'"); c != 1 {
			t.Fatalf("%d rows", c)
		}
	})
	t.Run("outside the caller's scope", func(t *testing.T) {
		before := count(t, "passengers", "TRUE")
		_, _, err := s.CreatePassenger(ctx, scope, globex.ID, storage.Passenger{PassengerName: "Intruder"}, idem("scope", "intruder"))
		if !errors.Is(err, policy.ErrScope) {
			t.Fatalf("got %v, want ErrScope", err)
		}
		if n := count(t, "passengers", "TRUE"); n != before {
			t.Fatalf("%d passengers, want %d", n, before)
		}
		if n := count(t, "idempotency_keys", "key = 'scope'"); n != 0 {
			t.Fatalf("%d key rows", n)
		}
		// An inactive account's scope admits nothing.
		if _, _, err := s.CreatePassenger(ctx, scopeOf(t, e, s, "hooli", "passengers"), principalOf(t, s, "hooli").Account.ID, storage.Passenger{PassengerName: "Ghost"}, nil); !errors.Is(err, policy.ErrScope) {
			t.Fatalf("inactive: got %v, want ErrScope", err)
		}
		if _, _, err := s.CreatePassenger(ctx, scopeOf(t, e, s, "acme", "services"), acme.ID, storage.Passenger{PassengerName: "Wrong scope"}, nil); !errors.Is(err, policy.ErrScope) {
			t.Fatalf("services scope: got %v, want ErrScope", err)
		}
	})
	t.Run("inside a caller's transaction", func(t *testing.T) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = storage.NewStore(tx).CreatePassenger(ctx, scope, acme.ID, storage.Passenger{PassengerName: "In Tx"}, idem("tx", "tx"))
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n := count(t, "passengers", "passenger_name = 'In Tx'"); n != 0 {
			t.Fatalf("%d rows after the caller's rollback", n)
		}
	})
	t.Run("subaccount creates for its parent", func(t *testing.T) {
		night := principalOf(t, s, "acme-night").Account
		p, _, err := s.CreatePassenger(ctx, scopeOf(t, e, s, "acme-night", "passengers"), night.ManagerID, storage.Passenger{PassengerName: "Night Rider"},
			&storage.IdempotentRequest{AccountID: night.ID, Key: "k1", RequestHash: []byte("h")})
		if err != nil || p.AccountID != acme.ID {
			t.Fatalf("err %v, %+v", err, p)
		}
	})
}
