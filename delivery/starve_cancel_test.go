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
	if w.scalar(`SELECT count(*) FROM webhooks WHERE url = ? AND proven_at IS NOT NULL`, healthy.URL) != 1 {
		t.Fatal("the new endpoint that answered is not proven by its first success")
	}
	if n := deadStarted.Load(); n != 1 {
		t.Fatalf("%d attempts to dead endpoints started, want 1 (a quarter of 4 workers)", n)
	}
}

// TestNewDeadEndpointsLeaveWorkersToHealthy: new endpoints (never
// failed, never proven) that never answer are unproven, not healthy: one
// slot each and together at most a quarter of the workers, so a proven
// endpoint's deliveries all arrive while their first attempts are held
// (before, each took its 2 slots for its first Timeout, and enough of
// them held every worker). A new endpoint that answers waits for the
// unproven share like them, until its first success proves it
// (TestFailingEndpointsLeaveWorkersToHealthy's new endpoint).
func TestNewDeadEndpointsLeaveWorkersToHealthy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var deadStarted atomic.Int64
	dead := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) {
		deadStarted.Add(1)
		<-r.Context().Done()
	})
	healthy := newReceiver(t, nil)
	for range 5 {
		w.addWebhook("acme", dead.URL)
	}
	proven := w.addWebhook("globex", healthy.URL)
	w.exec(`UPDATE webhooks SET proven_at = now() WHERE id = ?`, proven.id)
	for range 4 {
		w.notify(acmeVan)
	}
	w.start(func(o *delivery.Options) {
		o.Workers, o.EndpointInflight = 4, 2
		o.Client = client(time.Minute)
	})
	eventually(t, "a dead attempt in flight", func() bool { return deadStarted.Load() == 1 })
	for range 12 {
		w.notify(globexReefr)
	}
	eventually(t, "every delivery to the proven endpoint", func() bool { return len(healthy.requests()) == 12 })
	if n := deadStarted.Load(); n != 1 {
		t.Fatalf("%d attempts to new dead endpoints started, want 1 (a quarter of 4 workers)", n)
	}
	if w.scalar(`SELECT count(*) FROM webhooks WHERE url = ? AND proven_at IS NOT NULL`, dead.URL) != 0 {
		t.Fatal("a dead endpoint is proven")
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

// healthyRaceStore is the real store with the race the claim cannot rule
// out made certain: a claim for healthy endpoints only comes back with a
// failing one (its endpoint began failing between the claim's look at
// the queue and its read of the webhook).
type healthyRaceStore struct{ *storage.Store }

func (s healthyRaceStore) ClaimDelivery(ctx context.Context, o storage.ClaimOptions) (*storage.Claim, error) {
	o.SkipFailing, o.SkipUnproven = false, false
	return s.Store.ClaimDelivery(ctx, o)
}

// TestFailingClaimWithoutTokenEnds: a worker without a failing-share
// token that gets a failing endpoint's delivery sends it and gives back
// no token it never took, so every delivery arrives and Run returns when
// its context ends (it once waited forever for a token, CI stop 41).
func TestFailingClaimWithoutTokenEnds(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slow := func(rw http.ResponseWriter, _ *http.Request, _ int) {
		time.Sleep(100 * time.Millisecond)
		rw.WriteHeader(http.StatusNoContent)
	}
	a, b := newReceiver(t, slow), newReceiver(t, slow)
	for _, url := range []string{a.URL, b.URL} {
		h := w.addWebhook("acme", url)
		w.exec(`UPDATE webhooks SET failing_since = now() - interval '1 hour' WHERE id = ?`, h.id)
	}
	for range 4 {
		w.notify(acmeVan)
	}
	s, err := delivery.New(delivery.Options{Store: healthyRaceStore{w.store}, Policy: w.policy, Keys: w.keys, Client: client(2 * time.Second),
		Workers: 2, EndpointInflight: 2, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	eventually(t, "every delivery sent", func() bool { return w.states()["succeeded"] == 8 })
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return 20 s after its context ended: a worker waits for a failing-share token")
	}
}
