package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestIdleConnectionsClosedByAProxy (issue 34 item 7): a proxy between the
// pool and PostgreSQL closes connections that stay idle (HAProxy's timeout
// client and timeout server, 50 s by default; here 1 s), without a word to
// either side. The pool's check before reuse must see each such
// connection dead and dial again, so the first write after the quiet
// spell, and every statement after it, succeeds: no ErrUnavailable (503).
// On 272e7e0 the check read with a deadline of "now", which Go refuses
// before it looks at the socket: every closed connection passed for live
// and the first statement on it failed with EOF. Both ways a proxy closes
// (FIN, RST), several rounds, every pooled connection closed each round.
func TestIdleConnectionsClosedByAProxy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, db := newStore(t)
	importJSON(t, db, demodata.File())
	e := newEngine(t)
	passengers := scopeOf(t, e, base, "acme", "passengers")
	services := scopeOf(t, e, base, "acme", "services")
	acme := principalOf(t, base, "acme").Account.ID
	const pooled = 4
	for _, how := range []storagetest.Cut{storagetest.CutClose, storagetest.CutReset} {
		t.Run(how.String(), func(t *testing.T) {
			proxy := storagetest.NewProxy(t, db.URL)
			pdb := storage.Open(proxy.URL, storage.Options{MaxOpenConns: pooled})
			t.Cleanup(func() { pdb.Close() })
			s := storage.NewStore(pdb)
			n := 0
			statements := []struct {
				name string
				run  func() error
			}{
				{"create_passenger", func() error {
					n++
					key := fmt.Sprintf("idle-%s-%d", how, n)
					_, _, err := s.CreatePassenger(ctx, passengers, acme, storage.Passenger{PassengerName: key, PassengerActive: true},
						&storage.IdempotentRequest{AccountID: acme, Key: key, RequestHash: []byte(key)})
					return err
				}},
				{"touch_token", func() error { return s.TouchToken(ctx, 1, time.Now()) }},
				{"list", func() error {
					_, err := storage.List(ctx, s, services, storage.Services, storage.ListRequest{Page: 1, PerPage: 5, Sort: field(storage.Services, "service_id")})
					return err
				}},
			}
			proxy.CloseIdle(time.Second, how)
			closed := 0
			for round := range 3 {
				// Every connection of the pool used at once, then idle:
				// counted at the proxy, not by backend pid, which a
				// transaction-pooling PgBouncer behind the proxy shares
				// between them (CI's PgBouncer pass).
				if got := heldThrough(t, pdb, proxy, pooled); got != pooled {
					t.Fatalf("round %d: %d connections through the proxy, want %d", round, got, pooled)
				}
				// The quiet spell: the proxy closes every one of them.
				for deadline := time.Now().Add(60 * time.Second); proxy.IdleClosed() < closed+pooled || proxy.Open() > 0; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("round %d: the proxy closed %d idle connections, want %d", round, proxy.IdleClosed()-closed, pooled)
					}
				}
				closed = proxy.IdleClosed()
				for _, st := range statements {
					if err := st.run(); err != nil {
						t.Errorf("round %d: %s after the proxy closed the pool's idle connections: %v", round, st.name, err)
					}
				}
			}
		})
	}
}

// heldThrough takes n connections of db at once, runs a statement on each,
// and returns how many connections go through proxy while they are held.
func heldThrough(t *testing.T, db *bun.DB, proxy *storagetest.Proxy, n int) int {
	t.Helper()
	ctx := context.Background()
	conns := make([]bun.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	return proxy.Open()
}
