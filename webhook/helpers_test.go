package webhook

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// noLeak fails the test when, after every later cleanup (servers closed),
// more goroutines run than before it: nothing of an attempt may survive it.
// Call it first in a test so that its cleanup runs last.
func noLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines after the test, %d before:\n%s", n, before, buf)
		}
	})
}

// settles fails unless the goroutine count comes back to at most before
// (taken just before an attempt, servers running): the attempt left no
// connection and no goroutine on either side.
func settles(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines after the attempt, %d before:\n%s", n, before, buf)
	}
}

// receiver is an httptest server that counts the connections it accepted
// and the requests it got.
type receiver struct {
	*httptest.Server
	conns, requests atomic.Int64
}

func newReceiver(t testing.TB, useTLS bool, h http.HandlerFunc) *receiver {
	t.Helper()
	var cfg *tls.Config
	if useTLS {
		cfg = &tls.Config{}
	}
	return newReceiverTLS(t, cfg, h)
}

// newReceiverTLS starts a receiver speaking TLS with cfg (httptest's
// certificate when cfg has none), or plain HTTP when cfg is nil.
func newReceiverTLS(t testing.TB, cfg *tls.Config, h http.HandlerFunc) *receiver {
	t.Helper()
	r := &receiver{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		h(w, req)
	}))
	r.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	r.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			r.conns.Add(1)
		}
	}
	if cfg != nil {
		r.TLS = cfg
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(r.Close)
	return r
}

// port is the receiver's port.
func (r *receiver) port() string {
	_, p, _ := net.SplitHostPort(r.Listener.Addr().String())
	return p
}

// untouched fails when the receiver saw a connection.
func (r *receiver) untouched(t *testing.T) {
	t.Helper()
	if c, q := r.conns.Load(), r.requests.Load(); c != 0 || q != 0 {
		t.Errorf("receiver got %d connections and %d requests, want none", c, q)
	}
}

// rawServer accepts TCP connections on 127.0.0.1 and runs handle on each;
// at cleanup it closes the listener and every connection and waits for the
// handlers.
func rawServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// dnsServer is a local DNS server over UDP answering A and AAAA queries from
// answer (a name without its final dot → its addresses, asked anew at every
// query); other names are NXDOMAIN. queries counts the questions asked.
type dnsServer struct {
	answer  func(name string) []netip.Addr
	queries atomic.Int64
	// silent drops every query unanswered (a resolver that never answers).
	silent bool
}

// resolver starts the server and returns a Go resolver that asks only it.
func (d *dnsServer) resolver(t *testing.T) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := d.reply(buf[:n]); reply != nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	t.Cleanup(func() {
		_ = pc.Close()
		<-done
	})
	addr := pc.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "udp", addr)
		},
	}
}

// reply answers one query (one question, class IN).
func (d *dnsServer) reply(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if l > 63 || i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	question := q[12 : i+5]
	d.queries.Add(1)
	if d.silent {
		return nil
	}
	addrs := d.answer(strings.ToLower(strings.Join(labels, ".")))
	out := append([]byte(nil), q[:2]...)
	flags := uint16(0x8180)
	if addrs == nil {
		flags |= 3 // NXDOMAIN
	}
	var answers [][]byte
	for _, a := range addrs {
		if (qtype == 1) != a.Is4() || (qtype != 1 && qtype != 28) {
			continue
		}
		rr := []byte{0xc0, 12, 0, byte(qtype), 0, 1, 0, 0, 0, 0} // TTL 0
		raw := a.AsSlice()
		rr = binary.BigEndian.AppendUint16(rr, uint16(len(raw)))
		answers = append(answers, append(rr, raw...))
	}
	out = binary.BigEndian.AppendUint16(out, flags)
	out = binary.BigEndian.AppendUint16(out, 1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(answers)))
	out = append(out, 0, 0, 0, 0)
	out = append(out, question...)
	for _, a := range answers {
		out = append(out, a...)
	}
	return out
}
