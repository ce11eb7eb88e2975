package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/webhook"
)

// The webhooks workload's receiver: one HTTP server on the loopback
// interface standing in for many endpoints (/hook/0, /hook/1, ...). It
// verifies each request's signature with its endpoint's secret, notes when
// it arrived and the notification's created_at from the body, and answers
// 204, except on the endpoints marked dead, which hold the request until
// the sender gives up (its per-attempt timeout). Down, it refuses
// connections (its listener is closed) on the same port it comes back on.

// arrival is one request a receiver endpoint got.
type arrival struct {
	endpoint       int
	msgID          string
	notificationID int64
	createdAt      time.Time // the notification's (zero for a test delivery)
	received       time.Time
	valid          bool
}

// receiver is the in-process receiver of the webhooks workload.
type receiver struct {
	addr string // host:port, kept across down and up

	mu       sync.Mutex
	srv      *http.Server
	secrets  map[int][][]byte // endpoint → the secrets that may sign
	dead     map[int]bool
	arrivals []arrival
}

// startReceiver listens on a free port of 127.0.0.1.
func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	r := &receiver{addr: ln.Addr().String(), secrets: map[int][][]byte{}, dead: map[int]bool{}}
	r.serve(ln)
	return r, nil
}

// url is the URL of endpoint i.
func (r *receiver) url(i int) string { return fmt.Sprintf("http://%s/hook/%d", r.addr, i) }

// serve serves on ln with a new server.
func (r *receiver) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 10 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// down closes the listener and every connection: connections are refused
// until up.
func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// up listens again on the same address.
func (r *receiver) up() error {
	var err error
	for range 50 { // the port may linger for a moment after Close
		var ln net.Listener
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			r.serve(ln)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("receiver: listening again on %s: %w", r.addr, err)
}

// close stops the receiver for good.
func (r *receiver) close() { r.down() }

// reset forgets the arrivals and sets the endpoints' secrets and which
// endpoints are dead.
func (r *receiver) reset(secrets map[int][][]byte, dead map[int]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets, r.dead, r.arrivals = secrets, dead, nil
}

// snapshot returns the arrivals so far.
func (r *receiver) snapshot() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.arrivals...)
}

// handle receives one delivery.
func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	received := time.Now()
	i, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/hook/"))
	if err != nil || req.Method != http.MethodPost {
		http.Error(w, "not an endpoint", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return
	}
	r.mu.Lock()
	secrets, dead := r.secrets[i], r.dead[i]
	r.mu.Unlock()
	if dead {
		<-req.Context().Done() // held until the sender gives up or the receiver closes
		return
	}
	a := arrival{endpoint: i, msgID: req.Header.Get("webhook-id"), received: received,
		valid: signed(req.Header, body, secrets)}
	var payload struct {
		Data struct {
			ID        int64     `json:"id"`
			CreatedAt time.Time `json:"created_at"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &payload) == nil {
		a.notificationID, a.createdAt = payload.Data.ID, payload.Data.CreatedAt
	}
	r.mu.Lock()
	r.arrivals = append(r.arrivals, a)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// signed reports whether the webhook-signature header holds a v1
// signature of the request by one of secrets, with a timestamp within 5
// minutes (what a receiver checks: docs/webhooks.md).
func signed(h http.Header, body []byte, secrets [][]byte) bool {
	sec, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return false
	}
	ts := time.Unix(sec, 0)
	if d := time.Since(ts); d > 5*time.Minute || d < -5*time.Minute {
		return false
	}
	got := strings.Fields(h.Get("webhook-signature"))
	for _, s := range secrets {
		want := webhook.Sign(h.Get("webhook-id"), ts, body, s)
		for _, g := range got {
			if g == want {
				return true
			}
		}
	}
	return false
}
