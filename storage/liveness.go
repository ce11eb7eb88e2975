package storage

import (
	"context"
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"net"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// discardDeadConn is the pool's check of an idle connection before it is
// used again. A connection the server terminated (it sent FATAL and
// closed), or the network closed or reset, while it sat idle would fail
// the next statement with io.EOF or a reset: a 503 for a request that a
// live connection could have served. An idle connection has nothing to
// read, so a read that does not time out at once means it is dead (EOF,
// reset) or the server spoke unasked (a FATAL before closing): either way
// it is discarded with driver.ErrBadConn, and database/sql takes another
// or dials a new one. The read is skipped on TLS, where a timed-out read
// is not guaranteed to leave the stream intact.
func discardDeadConn(_ context.Context, cn *pgdriver.Conn) error {
	nc := cn.Conn()
	if _, isTLS := nc.(*tls.Conn); isTLS || nc == nil {
		return nil
	}
	if err := nc.SetReadDeadline(time.Now()); err != nil {
		return driver.ErrBadConn
	}
	var b [1]byte
	n, err := nc.Read(b[:])
	if n > 0 {
		return driver.ErrBadConn
	}
	var netErr net.Error
	if err != nil && !(errors.As(err, &netErr) && netErr.Timeout()) {
		return driver.ErrBadConn
	}
	// pgdriver sets its own deadline before each read.
	_ = nc.SetReadDeadline(time.Time{})
	return nil
}
