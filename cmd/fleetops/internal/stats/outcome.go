package stats

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Outcome is what one request came to, as the recorder counts it.
type Outcome struct {
	// Status is the HTTP status; meaningless when Err is set.
	Status int
	// Code is the error code of the answer's error envelope, "" when none.
	Code string
	// Latency is the time from sending to the end of the answer's body.
	Latency time.Duration
	// Err is a transport error: no answer was read.
	Err error
}

// Class is the column of an outcome in a timeline: "error" for a transport
// error, else "2xx", "429", "503", "5xx" or "4xx" (every other status,
// redirects and informational ones included, which fleetapi never sends).
func Class(o Outcome) string {
	switch {
	case o.Err != nil:
		return "error"
	case o.Status >= 200 && o.Status < 300:
		return "2xx"
	case o.Status == 429 || o.Status == 503:
		return strconv.Itoa(o.Status)
	case o.Status >= 500:
		return "5xx"
	}
	return "4xx"
}

// ServerErrors is how many of statuses (status → count) are 5xx.
func ServerErrors(statuses map[int]int) int {
	n := 0
	for st, k := range statuses {
		if st >= 500 {
			n += k
		}
	}
	return n
}

// ErrKind names a transport error briefly for the tables: the common ways
// a connection dies by name, else the last part of the error's text.
func ErrKind(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed (EOF)"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}
