package delivery_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/delivery"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/authsync"
)

// TestFailingEndpointsLeaveWorkersToHealthy: more failing endpoints
// (failing_since set, never answering) than the workers over the slots
// per endpoint, and one healthy endpoint: the failing ones hold one slot
// each and together at most a quarter of the workers (at least 1), so the
// healthy endpoint's deliveries all arrive while the dead attempts are
// still held (their Timeout is a minute: none has timed out, and no
// second dead attempt has started).
func TestFailingEndpointsLeaveWorkersToHealthy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var deadStarted, deadInflight atomic.Int64
	dead := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) {
		deadStarted.Add(1)
		deadInflight.Add(1)
		defer deadInflight.Add(-1)
		<-r.Context().Done()
	})
	healthy := newReceiver(t, nil)
	for range 5 {
		h := w.addWebhook("acme", dead.URL)
		w.exec(`UPDATE webhooks SET failing_since = now() - interval '1 hour' WHERE id = ?`, h.id)
	}
	w.addWebhook("globex", healthy.URL)
	for range 4 {
		w.notify(acmeVan)
	}
	w.start(func(o *delivery.Options) {
		o.Workers, o.EndpointInflight = 4, 2
		o.Client = client(time.Minute)
	})
	eventually(t, "a dead attempt in flight", func() bool { return deadInflight.Load() == 1 })
	for range 12 {
		w.notify(globexReefr)
	}
	eventually(t, "every delivery to the healthy endpoint", func() bool { return len(healthy.requests()) == 12 })
	if n := deadStarted.Load(); n != 1 {
		t.Fatalf("%d attempts to dead endpoints started, want 1 (a quarter of 4 workers)", n)
	}
}

// listenCancels runs s's cancel listener (as cmd/fleetapi's startSender
// does) on the world's database until the test ends, and returns once it
// listens.
func (w *world) listenCancels(s *delivery.Sender) {
	w.t.Helper()
	up := make(chan struct{}, 1)
	l := authsync.NewWakeListener(w.db.URL, func() {}, authsync.WakeOptions{Channel: storage.WebhookCancelChannel, Payload: s.Cancel,
		OnState: func(on bool) {
			if on {
				select {
				case up <- struct{}{}:
				default:
				}
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Run(ctx)
	}()
	w.t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-up:
	case <-time.After(20 * time.Second):
		w.t.Fatal("the cancel listener never listened")
	}
}

// TestChangesCancelSendsInFlight: a receiver that never answers (the
// attempt's Timeout a minute), a delivery in flight on one of two senders
// (two worker sets, each its own pool and cancel listener: two replicas),
// then DELETE /webhooks/{id}'s, PATCH active false's and the erase's
// storage writes: each returns with the receiver's request canceled
// (not timed out: the Timeout is longer than the test's wait), the
// attempt rolled back (no attempt recorded), and after the erase nothing
// more reaches the receiver.
func TestChangesCancelSendsInFlight(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"delete", "deactivate", "erase"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			var started, canceled atomic.Int64
			rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) {
				started.Add(1)
				<-r.Context().Done()
				canceled.Add(1)
			})
			h := w.addWebhook("acme", rc.URL)
			for range 3 {
				w.notify(acmeVan)
			}
			second := storage.NewStore(storage.Open(w.db.URL, storage.Options{MaxOpenConns: 4}))
			for _, st := range []*storage.Store{w.store, second} {
				s := w.start(func(o *delivery.Options) {
					o.Store, o.Workers, o.EndpointInflight = st, 2, 1
					o.Client = client(time.Minute)
				})
				w.listenCancels(s)
			}
			eventually(t, "a send in flight", func() bool { return started.Load() == 1 })
			ctx := context.Background()
			c := w.caller("acme")
			var err error
			var returned atomic.Bool
			go func() {
				defer returned.Store(true)
				switch change {
				case "delete":
					err = w.store.DeleteWebhook(ctx, c.scope, c.actor, h.id)
				case "deactivate":
					off := false
					_, err = w.store.UpdateWebhook(ctx, c.scope, c.actor, h.id, storage.WebhookPatch{Active: &off})
				case "erase":
					_, err = w.store.EraseAccount(ctx, "acme", false)
				}
			}()
			// within eventually's 20 s, before the attempt's Timeout (a
			// minute) could end the send: the send was canceled
			eventually(t, "the "+change+" returned", returned.Load)
			if err != nil {
				t.Fatal(err)
			}
			at := started.Load()
			eventually(t, "the receiver's request canceled", func() bool { return canceled.Load() >= 1 })
			if n := w.scalar(`SELECT count(*) FROM webhook_attempts`); n != 0 {
				t.Fatalf("%d attempts recorded, want 0 (the canceled one rolled back)", n)
			}
			// give the workers every chance to send more
			time.Sleep(300 * time.Millisecond)
			if change != "deactivate" && started.Load() != at {
				t.Fatalf("%d requests after the %s returned", started.Load()-at, change)
			}
			if change == "deactivate" {
				if n := w.scalar(`SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`); n != 3 {
					t.Fatalf("%d deliveries pending, want 3", n)
				}
				if started.Load() != at {
					t.Fatalf("%d requests to an inactive webhook", started.Load()-at)
				}
			}
		})
	}
}
