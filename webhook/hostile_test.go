package webhook

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileTimeout is the attempt timeout in these tests; an attempt must
// end within it (plus scheduling slack), whatever the receiver does.
const hostileTimeout = 400 * time.Millisecond

// slack bounds the time past Timeout an attempt may take to unwind on a
// loaded machine; it is not a speed assertion, it catches hangs.
const slack = 3 * time.Second

// readRequest reads a request's head from a raw connection.
func readRequest(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			return
		}
	}
}

// TestSendHostileReceivers: each way a receiver can misbehave ends within
// Timeout with the right class, and leaves no goroutine or connection behind.
func TestSendHostileReceivers(t *testing.T) {
	noLeak(t)
	stop := make(chan struct{})
	tlsR := newReceiver(t, true, func(w http.ResponseWriter, _ *http.Request) {})
	slow := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server then notices the client leaving
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	slowBody := newReceiver(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	endless := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	stall := rawServer(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	reset := rawServer(t, func(c net.Conn) {
		readRequest(c)
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	})
	closeEarly := rawServer(t, func(c net.Conn) {
		readRequest(c)
		_ = c.Close()
	})
	garbage := rawServer(t, func(c net.Conn) {
		readRequest(c)
		_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n\r\n")
		_ = c.Close()
	})
	trickle := rawServer(t, func(c net.Conn) {
		readRequest(c)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		for {
			if _, err := io.WriteString(c, "X"); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	hugeHeader := rawServer(t, func(c net.Conn) {
		readRequest(c)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 1<<20)+"\r\n\r\n")
		_ = c.Close()
	})
	interim := rawServer(t, func(c net.Conn) {
		readRequest(c)
		for {
			if _, err := io.WriteString(c, "HTTP/1.1 102 Processing\r\n\r\n"); err != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Cleanup(func() { close(stop) }) // registered last: runs before the servers close
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	_ = ln.Close()

	for _, tc := range []struct {
		name, url string
		class     Class
		err       string
		ok        bool
	}{
		{"tls_unknown_authority", tlsR.URL, ClassTLS, "tls: certificate signed by an unknown authority", false},
		{"tls_to_plain_http", "https://" + slow.Listener.Addr().String() + "/", ClassTLS, "tls: the receiver does not speak TLS", false},
		{"tls_handshake_stalled", "https://" + stall + "/", ClassTimeout, "timeout: no complete answer in time", false},
		{"no_answer", slow.URL, ClassTimeout, "timeout: no complete answer in time", false},
		{"headers_then_stall_body", slowBody.URL, "", "", true},
		{"endless_body", endless.URL, "", "", true},
		{"reset", "http://" + reset + "/", ClassReset, "reset: connection reset by the receiver", false},
		{"closed_before_answer", "http://" + closeEarly + "/", ClassReset, "reset: connection closed before an answer", false},
		{"not_http", "http://" + garbage + "/", ClassReset, "reset: no valid HTTP answer", false},
		{"trickled_headers", "http://" + trickle + "/", ClassTimeout, "timeout: no complete answer in time", false},
		{"endless_1xx", "http://" + interim + "/", ClassReset, "reset: no valid HTTP answer", false},
		{"huge_headers", "http://" + hugeHeader + "/", ClassReset, "reset: no valid HTTP answer", false},
		{"connection_refused", "http://" + closedPort + "/", ClassConnect, "connect: connection refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Cases that end on their own get a long Timeout: they must not
			// end by it.
			timeout := 20 * time.Second
			if tc.class == ClassTimeout || tc.name == "headers_then_stall_body" {
				timeout = hostileTimeout
			}
			c := NewClient(Config{AllowHTTP: true, AllowNets: loopback, Timeout: timeout})
			before := runtime.NumGoroutine()
			start := time.Now()
			res := c.Send(context.Background(), message(tc.url))
			took := time.Since(start)
			settles(t, before)
			if res.OK != tc.ok || res.Class != tc.class || res.Err != tc.err {
				t.Errorf("Send = %+v, want ok %v class %q err %q", res, tc.ok, tc.class, tc.err)
			}
			if took > timeout+slack {
				t.Errorf("Send took %s, Timeout is %s", took, timeout)
			}
		})
	}
}

// TestSendEndlessBodyStops: with a Timeout far longer than needed, an
// endless 200 body ends the attempt once MaxResponse bytes were read, not at
// the Timeout.
func TestSendEndlessBodyStops(t *testing.T) {
	noLeak(t)
	done := make(chan struct{})
	r := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {
		defer close(done)
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	c := NewClient(Config{AllowHTTP: true, AllowNets: loopback, Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := c.Send(ctx, message(r.URL))
	if !res.OK || res.Status != 200 {
		t.Fatalf("Send = %+v, want OK", res)
	}
	select {
	case <-done: // the client closed the connection: the receiver's writes failed
	case <-ctx.Done():
		t.Fatal("the receiver is still writing: the connection was not closed")
	}
}

// TestSendCallerContext: the caller's deadline and cancellation end an
// attempt too; a cancellation (shutdown) is classed apart from a timeout.
func TestSendCallerContext(t *testing.T) {
	noLeak(t)
	stop := make(chan struct{})
	r := newReceiver(t, false, func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		select {
		case <-req.Context().Done():
		case <-stop:
		}
	})
	t.Cleanup(func() { close(stop) })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c := NewClient(Config{AllowHTTP: true, AllowNets: loopback})
	res := c.Send(ctx, message(r.URL))
	if res.OK || res.Class != ClassTimeout {
		t.Errorf("caller's deadline: Send = %+v, want a timeout", res)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res = c.Send(ctx, message(r.URL))
	if res.OK || res.Class != ClassCanceled || res.Err != "canceled: the attempt was abandoned" {
		t.Errorf("caller's cancellation: Send = %+v, want canceled", res)
	}
}

// TestSendSilentDNS: a resolver that never answers ends the attempt within
// Timeout. (Go's resolver finishes the abandoned lookup in the background
// within its own timeout, resolv.conf's 5 s per try: noLeak waits for it.)
func TestSendSilentDNS(t *testing.T) {
	noLeak(t)
	dns := &dnsServer{silent: true}
	c := NewClient(Config{Resolver: dns.resolver(t), Timeout: hostileTimeout})
	start := time.Now()
	res := c.Send(context.Background(), message("https://hooks.customer.example/"))
	if took := time.Since(start); took > hostileTimeout+slack {
		t.Errorf("Send took %s, Timeout is %s", took, hostileTimeout)
	}
	if res.OK || res.Class != ClassDNS && res.Class != ClassTimeout || dns.queries.Load() == 0 {
		t.Errorf("Send = %+v after %d queries, want a dns failure or a timeout", res, dns.queries.Load())
	}
}
