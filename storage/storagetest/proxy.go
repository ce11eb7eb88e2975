package storagetest

import (
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Cut is a way for the network to drop a connection to the database.
type Cut int

const (
	// CutClose closes the connection in order (FIN): the client reads
	// io.EOF, as when the server process exits or a proxy closes.
	CutClose Cut = iota
	// CutReset aborts the connection (RST): the client gets ECONNRESET or
	// EPIPE, as when a load balancer or firewall drops it.
	CutReset
)

func (c Cut) String() string {
	if c == CutReset {
		return "reset"
	}
	return "close"
}

// Proxy is a TCP relay in front of a test database through which a test
// drops connections the way networks and servers do, without a message
// from PostgreSQL. It is stopped when the test ends.
type Proxy struct {
	// URL connects to the database through the proxy.
	URL string

	network, addr string
	ln            net.Listener
	mu            sync.Mutex
	conns         map[net.Conn]net.Conn // client side -> server side
}

// NewProxy starts a proxy in front of the database at dbURL (a TCP host or
// a unix socket given as the host parameter).
func NewProxy(t testing.TB, dbURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("storagetest: proxy: %v", err)
	}
	p := &Proxy{network: "tcp", addr: u.Host, conns: map[net.Conn]net.Conn{}}
	q := u.Query()
	if h := q.Get("host"); strings.HasPrefix(h, "/") {
		p.network, p.addr = "unix", h
		q.Del("host")
	}
	if p.network == "tcp" && u.Port() == "" {
		p.addr = net.JoinHostPort(u.Hostname(), "5432")
	}
	if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatalf("storagetest: proxy: %v", err)
	}
	u.Host = p.ln.Addr().String()
	u.RawQuery = q.Encode()
	p.URL = u.String()
	go p.accept()
	t.Cleanup(func() {
		_ = p.ln.Close()
		p.CutAll(CutClose)
	})
	return p
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial(p.network, p.addr)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns[client] = server
		p.mu.Unlock()
		go p.relay(client, server)
	}
}

// relay copies both ways until either side ends, then closes both.
func (p *Proxy) relay(client, server net.Conn) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	p.mu.Unlock()
	_ = client.Close()
	_ = server.Close()
}

// CutAll drops every open connection the given way and returns how many
// it dropped. New connections are accepted as before.
func (p *Proxy) CutAll(how Cut) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for client, server := range p.conns {
		if tcp, ok := client.(*net.TCPConn); ok && how == CutReset {
			_ = tcp.SetLinger(0) // Close sends RST
		}
		_ = client.Close()
		_ = server.Close()
		delete(p.conns, client)
	}
	return n
}
