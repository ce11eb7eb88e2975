package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/delivery"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/webhook"
)

// holdFirst is a receiver's answer that holds the first request until
// release is closed (or the sender gives up), then answers 200 to it and
// to every other.
func holdFirst(held chan<- struct{}, release <-chan struct{}) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			close(held)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusOK)
	}
}

// TestDatabaseLostMidSend: the database connection of a sender holding a
// claim dies while the receiver holds the request (its backend
// terminated, or the network resetting it): nothing of the attempt is
// recorded, and the delivery is sent again, with the same webhook-id,
// and then recorded once.
func TestDatabaseLostMidSend(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"backend terminated", "connection reset"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			held, release := make(chan struct{}), make(chan struct{})
			rc := newReceiver(t, holdFirst(held, release))
			w.addWebhook("acme", rc.URL)
			w.notify(acmeVan)
			proxy := storagetest.NewProxy(t, w.db.URL)
			pool := storage.Open(proxy.URL, storage.Options{MaxOpenConns: 4})
			t.Cleanup(func() { pool.Close() })
			w.start(func(o *delivery.Options) { o.Store, o.Workers = storage.NewStore(pool), 1 })
			<-held
			switch how {
			case "backend terminated":
				if n := w.scalar(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
					WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction') k`); n != 1 {
					t.Fatalf("%d claims' backends terminated, want 1", n)
				}
			default:
				if n := proxy.CutAll(storagetest.CutReset); n == 0 {
					t.Fatal("no connection to cut")
				}
			}
			close(release)
			eventually(t, "the delivery sent again and recorded", func() bool { return w.states()[storage.DeliverySucceeded] == 1 })
			got := rc.requests()
			if len(got) < 2 || got[0].id != got[len(got)-1].id {
				t.Fatalf("%d requests; the resend's webhook-id must be the first's", len(got))
			}
			if n := w.scalar(`SELECT count(*) FROM webhook_attempts`); n != 1 {
				t.Fatalf("%d attempts recorded, want 1 (the lost one was never committed)", n)
			}
			if n := w.scalar(`SELECT sum(deliveries_attempted) FROM usage_daily`); n != 1 {
				t.Fatalf("%d attempts counted, want 1", n)
			}
		})
	}
}

// TestEraseWaitsForASendInFlight: an erase of the owner's account while
// a send is held by its receiver waits for it; after the erase returns
// nothing of the account reaches any receiver.
func TestEraseWaitsForASendInFlight(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	held, release := make(chan struct{}), make(chan struct{})
	rc := newReceiver(t, holdFirst(held, release))
	w.addWebhook("acme", rc.URL)
	for range 5 {
		w.notify(acmeVan)
	}
	w.start(func(o *delivery.Options) { o.EndpointInflight = 1 })
	<-held
	done := make(chan error, 1)
	var returned atomic.Int64
	go func() {
		_, err := w.store.EraseAccount(context.Background(), "acme", false)
		returned.Store(int64(len(rc.requests())))
		done <- err
	}()
	eventually(t, "the erase waiting for the send's row", func() bool {
		return w.scalar(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	})
	select {
	case err := <-done:
		t.Fatalf("the erase returned during a send: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	at := returned.Load()
	// give the workers every chance to send something of acme's
	time.Sleep(500 * time.Millisecond)
	if n := int64(len(rc.requests())); n != at {
		t.Fatalf("%d requests after the erase returned", n-at)
	}
	if n := w.scalar(`SELECT count(*) FROM webhook_deliveries`); n != 0 {
		t.Fatalf("%d deliveries left", n)
	}
}

// TestSenderBesideTheWritePaths: the sender runs while the write paths
// that touch its rows run over and over, through the webhooks API's own
// storage writes (storage/webhooks.go, webhookdeliveries.go): PATCH
// (deactivate, re-activate), rotation, test and retry, DELETE and
// re-create, and finally the erase of the owner. No write fails but as
// its route answers 404/409 (no deadlock, no lock timeout).
func TestSenderBesideTheWritePaths(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, func(rw http.ResponseWriter, _ *http.Request, n int) {
		time.Sleep(10 * time.Millisecond)
		if n%3 == 0 {
			rw.WriteHeader(http.StatusInternalServerError) // failures move failing_since
			return
		}
		rw.WriteHeader(http.StatusOK)
	})
	w.addWebhook("acme", rc.URL)
	other := w.addWebhook("fleetco", rc.URL)
	w.start(func(o *delivery.Options) {
		o.Schedule = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}
	})
	ctx := context.Background()
	// the webhooks API's own storage writes, as their routes call them
	acme, fleetco := w.caller("acme"), w.caller("fleetco")
	expected := func(err error) error {
		if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
			return nil // a webhook deleted meanwhile, a delivery being sent or pending: answered 404/409
		}
		return err
	}
	flip := false
	writes := []struct {
		name string
		do   func() error
	}{
		{"PATCH", func() error {
			d := "changed"
			flip = !flip
			active := !flip
			_, err := w.store.UpdateWebhook(ctx, fleetco.scope, fleetco.actor, other.id, storage.WebhookPatch{Description: &d, Active: &active})
			return expected(err)
		}},
		{"rotate", func() error {
			_, fresh, _ := webhook.NewSecret()
			sealed, err := w.keys.Seal(fresh, []byte(strconv.FormatInt(other.id, 10)))
			if err != nil {
				return err
			}
			_, _, err = w.store.RotateWebhookSecret(ctx, fleetco.scope, fleetco.actor, other.id, sealed)
			return expected(err)
		}},
		{"test and retry", func() error {
			if _, err := w.store.TestWebhook(ctx, fleetco.scope, fleetco.actor, other.id); expected(err) != nil {
				return err
			}
			var ids []int64
			if err := w.db.NewRaw(`SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND state <> 'pending' ORDER BY id DESC LIMIT 1`, other.id).Scan(ctx, &ids); err != nil {
				return err
			}
			for _, id := range ids {
				if _, err := w.store.RetryDelivery(ctx, fleetco.scope, fleetco.actor, other.id, id); expected(err) != nil {
					return err
				}
			}
			return nil
		}},
		{"DELETE", func() error {
			var ids []int64
			if err := w.db.NewRaw(`SELECT id FROM webhooks WHERE account_id = ?`, acme.actor.AccountID).Scan(ctx, &ids); err != nil {
				return err
			}
			for _, id := range ids {
				if err := expected(w.store.DeleteWebhook(ctx, acme.scope, acme.actor, id)); err != nil {
					return err
				}
			}
			w.addWebhook("acme", rc.URL)
			return nil
		}},
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	var rounds atomic.Int64
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.notify(acmeVan)
			time.Sleep(5 * time.Millisecond)
		}
	})
	for _, wr := range writes {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				err := wr.do()
				if err != nil {
					var pe interface{ Field(byte) string }
					if errors.As(err, &pe) {
						err = errors.Join(err, errors.New(pe.Field('D')))
					}
					errs <- errors.Join(errors.New(wr.name), err)
					return
				}
				rounds.Add(1)
				time.Sleep(3 * time.Millisecond)
			}
		})
	}
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); wg.Wait() }) }
	defer halt()
	eventuallyWithin(t, time.Minute, "deliveries attempted beside the writes", func() bool { return w.scalar(`SELECT count(*) FROM webhook_attempts`) >= 30 })
	halt()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := w.store.EraseAccount(ctx, "acme", false); err != nil {
		t.Fatalf("erase beside the sender: %v", err)
	}
	t.Logf("%d writes beside %d attempts", rounds.Load(), w.scalar(`SELECT count(*) FROM webhook_attempts`))
}

// unreachableStore is a sender's store whose claims fail as when the
// database cannot be reached (storage.ErrUnavailable) while down is set.
type unreachableStore struct {
	delivery.Store
	down   atomic.Bool
	failed atomic.Int64
}

func (u *unreachableStore) ClaimDelivery(ctx context.Context, o storage.ClaimOptions) (*storage.Claim, error) {
	if u.down.Load() {
		u.failed.Add(1)
		return nil, fmt.Errorf("%w: the primary is failing over", storage.ErrUnavailable)
	}
	return u.Store.ClaimDelivery(ctx, o)
}

// TestWakeEndsBackoffAfterDatabaseLoss: a worker backing off because the
// database could not be reached (a primary failing over) claims again at
// the next wake (a notification committed, the listener reconnected),
// not at the end of its back-off (an hour here: the delivery could not
// come before the test's bound without the wake).
func TestWakeEndsBackoffAfterDatabaseLoss(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rc := newReceiver(t, nil)
	w.addWebhook("acme", rc.URL)
	u := &unreachableStore{Store: w.store}
	u.down.Store(true)
	s := w.start(func(o *delivery.Options) { o.Store, o.Workers, o.Backoff, o.Poll = u, 1, time.Hour, time.Hour })
	eventually(t, "a claim failing", func() bool { return u.failed.Load() > 0 })
	u.down.Store(false)
	w.notify(acmeVan)
	s.Wake()
	eventually(t, "the delivery sent after the wake", func() bool { return w.states()[storage.DeliverySucceeded] == 1 })
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if n := u.failed.Load(); n != 1 {
		t.Fatalf("%d claims failed, want 1 (then the back-off)", n)
	}
}
