package stats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

func TestClass(t *testing.T) {
	for _, tc := range []struct {
		o    Outcome
		want string
	}{
		{Outcome{Err: errors.New("x"), Status: 200}, "error"},
		{Outcome{Status: 200}, "2xx"},
		{Outcome{Status: 201}, "2xx"},
		{Outcome{Status: 204}, "2xx"},
		{Outcome{Status: 299}, "2xx"},
		{Outcome{Status: 429}, "429"},
		{Outcome{Status: 503}, "503"},
		{Outcome{Status: 500}, "5xx"},
		{Outcome{Status: 502}, "5xx"},
		{Outcome{Status: 599}, "5xx"},
		{Outcome{Status: 400}, "4xx"},
		{Outcome{Status: 401}, "4xx"},
		{Outcome{Status: 404}, "4xx"},
		{Outcome{Status: 431}, "4xx"},
		{Outcome{Status: 304}, "4xx"},
		{Outcome{Status: 0}, "4xx"},
	} {
		if got := Class(tc.o); got != tc.want {
			t.Errorf("Class(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}

func TestServerErrors(t *testing.T) {
	if got := ServerErrors(map[int]int{200: 9, 429: 3, 499: 1, 500: 2, 503: 4, 599: 1}); got != 7 {
		t.Errorf("got %d, want 7", got)
	}
	if got := ServerErrors(nil); got != 0 {
		t.Errorf("nil: %d", got)
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// TestErrKind enumerates the ways a connection dies, wrapped as net/http
// wraps them.
func TestErrKind(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("Get \"http://127.0.0.1:1/x\": %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{wrap(syscall.ECONNREFUSED), "connection refused"},
		{wrap(syscall.ECONNRESET), "connection reset"},
		{wrap(syscall.EPIPE), "broken pipe"},
		{fmt.Errorf("read: %w", io.EOF), "connection closed (EOF)"},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "connection closed (EOF)"},
		{fmt.Errorf("do: %w", context.Canceled), "cancelled"},
		{&net.OpError{Op: "read", Net: "tcp", Err: timeoutError{}}, "timeout"},
		{errors.New("Get \"x\": tls: handshake failure"), "handshake failure"},
		{errors.New("plain"), "plain"},
	} {
		if got := ErrKind(tc.err); got != tc.want {
			t.Errorf("ErrKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
