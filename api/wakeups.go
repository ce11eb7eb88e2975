package api

import "sync"

// Wakeups fans the wakes of the notification channel (one LISTEN session
// per replica on fleet_notifications, storage/notifylisten) out to the
// open notification streams of the replica. Wake never waits: each stream
// has a one-slot channel, and a wake it has not taken yet already asks it
// to read everything after its cursor.
type Wakeups struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// NewWakeups returns a fan-out with no stream.
func NewWakeups() *Wakeups { return &Wakeups{subs: map[chan struct{}]struct{}{}} }

// Wake asks every open stream to read the notifications after its cursor.
func (w *Wakeups) Wake() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default: // a wake is pending already
		}
	}
}

// subscribe returns a stream's wake channel and its cancellation. A nil
// Wakeups gives a channel that never fires (the stream polls).
func (w *Wakeups) subscribe() (<-chan struct{}, func()) {
	if w == nil {
		return nil, func() {}
	}
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs, ch)
		w.mu.Unlock()
	}
}
