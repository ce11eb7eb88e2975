package storagetest

import (
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	armed         map[net.Conn]func() bool
	stalled       map[net.Conn]bool
	// active is when each connection last carried a byte either way (Unix
	// nanoseconds), for CloseIdle.
	active     map[net.Conn]*atomic.Int64
	idleClosed atomic.Int64
	idleOnce   sync.Once
	// delay holds back what the server sends (DelayBack), in nanoseconds.
	delay    atomic.Int64
	stop     chan struct{}
	stopOnce sync.Once
}

// NewProxy starts a proxy in front of the database at dbURL (a TCP host or
// a unix socket given as the host parameter).
func NewProxy(t testing.TB, dbURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("storagetest: proxy: %v", err)
	}
	p := &Proxy{network: "tcp", addr: u.Host, conns: map[net.Conn]net.Conn{}, armed: map[net.Conn]func() bool{}, stalled: map[net.Conn]bool{},
		active: map[net.Conn]*atomic.Int64{}, stop: make(chan struct{})}
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
	t.Cleanup(p.Close)
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
		last := &atomic.Int64{}
		last.Store(time.Now().UnixNano())
		p.mu.Lock()
		p.conns[client] = server
		p.active[client] = last
		p.mu.Unlock()
		go p.relay(client, server, last)
	}
}

// relay copies both ways until either side ends, then closes both; last
// records when a byte last went either way.
func (p *Proxy) relay(client, server net.Conn, last *atomic.Int64) {
	done := make(chan struct{}, 2)
	go func() { p.forward(server, client, last); done <- struct{}{} }()
	go func() { p.back(client, server, last); done <- struct{}{} }()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.armed, client)
	delete(p.stalled, client)
	delete(p.active, client)
	p.mu.Unlock()
	_ = client.Close()
	_ = server.Close()
}

// forward copies what the client sends to the server. A connection armed
// by CutOnNextSend runs its action when its next message arrives, and
// forwards it only if the action says so.
func (p *Proxy) forward(server, client net.Conn, last *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			p.mu.Lock()
			action := p.armed[client]
			delete(p.armed, client)
			p.mu.Unlock()
			if action != nil && !action() {
				return
			}
			if p.isStalled(client) {
				continue
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// CutOnNextSend arms every open connection: when the client next sends
// (a statement), the connection is dropped the given way before the
// statement reaches the server, so the client loses it mid-statement.
func (p *Proxy) CutOnNextSend(how Cut) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for client, server := range p.conns {
		p.armed[client] = func() bool {
			p.drop(client, server, how)
			return false
		}
	}
	return len(p.conns)
}

// OnNextSend arms every open connection: when the client next sends, fn
// runs first (say, pg_terminate_backend from another connection), then the
// statement is forwarded.
func (p *Proxy) OnNextSend(fn func()) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for client := range p.conns {
		p.armed[client] = func() bool { fn(); return true }
	}
	return len(p.conns)
}

// back copies what the server sends to the client, unless the connection
// is stalled, each chunk DelayBack after it arrived: a reader goroutine
// keeps reading from the server (which sees no back-pressure) and a
// writer sends each chunk, in order, once it is due. What the server sent
// before it closed is still delivered, late, before the connection ends.
func (p *Proxy) back(client, server net.Conn, last *atomic.Int64) {
	type chunk struct {
		due  time.Time
		data []byte
	}
	queue := make(chan chunk, 4096)
	go func() {
		defer close(queue)
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				now := time.Now()
				last.Store(now.UnixNano())
				queue <- chunk{due: now.Add(time.Duration(p.delay.Load())), data: append([]byte(nil), buf[:n]...)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		time.Sleep(time.Until(c.due))
		if p.isStalled(client) {
			continue
		}
		if _, err := client.Write(c.data); err != nil {
			_ = server.Close() // ends the reader
			for range queue {
			}
			return
		}
	}
}

// DelayBack holds every byte the server sends back for d before the
// client gets it, in order, on open connections and new ones: a slow
// network or an overloaded proxy on the way back (what the client sends
// goes at once). Zero ends the delay for the bytes that arrive after.
func (p *Proxy) DelayBack(d time.Duration) { p.delay.Store(int64(d)) }

func (p *Proxy) isStalled(client net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled[client]
}

// StallAll makes every open connection silent without closing it, as a
// network partition does: from now on what either side sends is dropped,
// and neither side learns it. It returns how many it stalled.
func (p *Proxy) StallAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for client := range p.conns {
		p.stalled[client] = true
	}
	return len(p.conns)
}

func (p *Proxy) drop(client, server net.Conn, how Cut) {
	if tcp, ok := client.(*net.TCPConn); ok && how == CutReset {
		_ = tcp.SetLinger(0) // Close sends RST
	}
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
		p.drop(client, server, how)
		delete(p.conns, client)
	}
	return n
}

// CloseIdle makes the proxy close, the given way, every connection that
// has carried no byte either way for after, as HAProxy's timeout client
// and timeout server do (50 s in its documented defaults): neither side is
// told beforehand. It applies to open connections and new ones, from now
// until the proxy stops; call it once.
func (p *Proxy) CloseIdle(after time.Duration, how Cut) {
	p.idleOnce.Do(func() {
		go func() {
			tick := time.NewTicker(max(after/8, time.Millisecond))
			defer tick.Stop()
			for {
				select {
				case <-p.stop:
					return
				case now := <-tick.C:
					p.closeIdle(now.Add(-after), how)
				}
			}
		}()
	})
}

// closeIdle closes the connections idle since before.
func (p *Proxy) closeIdle(before time.Time, how Cut) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for client, server := range p.conns {
		if p.active[client].Load() < before.UnixNano() {
			p.drop(client, server, how)
			delete(p.conns, client)
			p.idleClosed.Add(1)
		}
	}
}

// IdleClosed is how many connections CloseIdle has closed so far.
func (p *Proxy) IdleClosed() int { return int(p.idleClosed.Load()) }

// Open is how many connections go through the proxy now.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops the proxy: new connections are refused (as by a server that
// is gone) and open ones are closed.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.stopOnce.Do(func() { close(p.stop) })
	p.CutAll(CutClose)
}
