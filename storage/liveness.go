package storage

import (
	"context"
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// poolEpoch tells a pool's connections made before the server behind its
// address changed from those made after (docs/design.md §13). A statement that
// fails because the server is read-only (SQLSTATE 25006: the address now
// reaches a standby, the old primary demoted), is shutting down (class 57:
// admin shutdown, crash shutdown, cannot connect now) or is gone (the
// connection broke) starts a new epoch; every connection dialled in an
// earlier epoch is then discarded the next time the pool would hand it out
// (discardDeadConn), so that none of them is used for a write again, also
// those idle in the pool that have not failed yet (to a frozen server they
// would hang until their read timeout). pgdriver itself closes only the
// connection that broke; a 25006 does not close any.
type poolEpoch struct{ n atomic.Uint64 }

// epochConn is a network connection stamped with the epoch it was dialled
// in.
type epochConn struct {
	net.Conn
	epoch uint64
}

// dialer stamps each new connection of the pool with the current epoch.
func (p *poolEpoch) dialer() pgdriver.Option {
	return func(conf *pgdriver.Config) {
		dial := conf.Dialer
		conf.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			epoch := p.n.Load()
			nc, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &epochConn{Conn: nc, epoch: epoch}, nil
		}
	}
}

// stale reports whether nc was dialled before the current epoch.
func (p *poolEpoch) stale(nc net.Conn) bool {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	ec, ok := nc.(*epochConn)
	return ok && ec.epoch < p.n.Load()
}

// BeforeQuery implements bun.QueryHook.
func (p *poolEpoch) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

// AfterQuery implements bun.QueryHook: a statement that failed because the
// server behind the address changed starts a new epoch.
func (p *poolEpoch) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if serverChanged(ev.Err) {
		p.n.Add(1)
	}
}

// serverChanged reports whether err says that the server a connection
// reaches is no longer a primary that serves it: read-only (25006), shutting
// down or not accepting connections (class 57), or gone (the connection
// broke or was refused). A client that went away (context.Canceled) or a
// statement that ran out of time (context.DeadlineExceeded) says nothing
// about the server.
func serverChanged(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		code := pgErr.Field('C')
		return code == "25006" || strings.HasPrefix(code, "57P")
	}
	var netErr net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &netErr)
}

// discardDeadConn is the pool's check of an idle connection before it is
// used again. A connection dialled before the pool's current epoch
// (poolEpoch: the server behind the address changed since) is discarded.
// A connection the server terminated (it sent FATAL and closed), or the
// network or a proxy closed or reset while it sat idle (HAProxy's idle
// timeouts: 50 s by default), would fail the next statement with io.EOF
// or a reset: a 503 for a request that a live connection could have
// served. An idle connection has nothing to read, so its socket is looked
// at without reading from it or waiting (socketDead: a peek that does not
// block): bytes waiting (a FATAL before closing, a TLS alert), the end of
// the stream or an error mean dead, and it answers driver.ErrBadConn, on
// which database/sql discards it and takes another or dials a new one.
// The peek looks at the raw socket, under TLS too, and consumes nothing.
func (p *poolEpoch) discardDeadConn(_ context.Context, cn *pgdriver.Conn) error {
	nc := cn.Conn()
	if nc == nil {
		return nil
	}
	if p.stale(nc) {
		return driver.ErrBadConn
	}
	if socketDead(nc) {
		return driver.ErrBadConn
	}
	return nil
}

// rawSocket returns the operating system's socket under nc (through TLS
// and the pool's epoch stamp), or nil when there is none (a connection a
// test or a dialer wrapped otherwise).
func rawSocket(nc net.Conn) syscall.Conn {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	if ec, ok := nc.(*epochConn); ok {
		nc = ec.Conn
	}
	sc, _ := nc.(syscall.Conn)
	return sc
}

// socketDead reports whether the idle connection nc is dead: its socket
// has bytes waiting, has reached the end of its stream or holds an error
// (peekSocket). A connection without a raw socket is taken as alive, as
// is one whose socket cannot be looked at.
//
// A read with a deadline of "now", which this replaces, never looked: Go
// refuses a read whose deadline has passed before it asks the socket, so
// every dead connection passed for a live one.
func socketDead(nc net.Conn) bool {
	sc := rawSocket(nc)
	if sc == nil {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	// A deadline left from the connection's last statement would make the
	// raw read refuse before it runs the peek, as it made the old check's
	// read; pgdriver sets its own before each read.
	if err := nc.SetReadDeadline(time.Time{}); err != nil {
		return true
	}
	var dead bool
	if err := rc.Read(func(fd uintptr) bool {
		dead = peekSocket(fd)
		return true // looked once; never wait for the socket
	}); err != nil {
		return true
	}
	return dead
}
