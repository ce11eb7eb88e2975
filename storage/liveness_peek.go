//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos

package storage

import (
	"errors"
	"syscall"
)

// peekSocket looks at the socket fd without consuming or waiting
// (MSG_PEEK|MSG_DONTWAIT, as the liveness checks of go-redis, the MySQL
// driver and others do): dead unless it would block, that is unless
// nothing is waiting and the stream is open. A byte waiting (the server
// spoke unasked), the end of the stream (n == 0: closed by the peer) and
// any other error (a reset) all mean dead; an interrupted look says
// nothing, and the connection is taken as alive.
func peekSocket(fd uintptr) (dead bool) {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR)
}
