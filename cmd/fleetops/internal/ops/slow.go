package ops

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
)

// slowClient opens a connection from source to addr and trickles a request
// at one line (headers) or one byte (body) per second, the way a slowloris
// client does. It returns how long the server kept the connection open and
// what the client saw at the end.
func slowClient(ctx context.Context, source, addr, secret string, body bool, limit time.Duration) (time.Duration, string) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, "dial: " + stats.ErrKind(err)
	}
	defer c.Close()
	start := time.Now()
	head := "POST /api/v2/passengers HTTP/1.1\r\nHost: " + addr + "\r\n"
	if body {
		// A valid token, so that the handler reads the body.
		head += "Authorization: Bearer " + secret + "\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
	}
	if _, err := c.Write([]byte(head)); err != nil {
		return time.Since(start), "write: " + stats.ErrKind(err)
	}
	// Anything the server sends (a 408 or 400 before closing) or a read
	// error ends the client.
	closed := make(chan string, 1)
	go func() {
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if n > 0 {
			line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
			closed <- "answered " + strings.TrimPrefix(line, "HTTP/1.1 ")
			return
		}
		closed <- "closed (" + stats.ErrKind(err) + ")"
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case how := <-closed:
			return time.Since(start), how
		case <-ctx.Done():
			return time.Since(start), "cancelled"
		case <-tick.C:
		}
		if time.Since(start) > limit {
			return time.Since(start), "still open at the run's limit"
		}
		chunk := fmt.Sprintf("X-Slow-%d: 1\r\n", i)
		if body {
			chunk = "{"
		}
		if _, err := c.Write([]byte(chunk)); err != nil {
			select {
			case how := <-closed:
				return time.Since(start), how
			case <-time.After(time.Second):
				return time.Since(start), "write: " + stats.ErrKind(err)
			}
		}
	}
}

// slowResult is what the slow clients of a phase saw: how long the server
// kept each connection, and how each ended ("headers: answered 408 ...").
type slowResult struct {
	headers, bodies []time.Duration
	endings         map[string]int
}

// span is the number, shortest and longest of some durations.
type span struct {
	n        int
	min, max time.Duration
}

// spanOf spans d (any order); zeros when empty.
func spanOf(d []time.Duration) span {
	return span{n: len(d), min: stats.Percentile(d, 0), max: stats.Percentile(d, 100)}
}

// headersHeld spans the slow-header connections.
func (s slowResult) headersHeld() span { return spanOf(s.headers) }

// bodiesHeld spans the slow-body connections.
func (s slowResult) bodiesHeld() span { return spanOf(s.bodies) }

// slowPhase runs n slow-header and n slow-body clients from source at once
// and summarises how long the server kept them.
func slowPhase(ctx context.Context, source, addr, secret string, n int, limit time.Duration) slowResult {
	var mu sync.Mutex
	res := slowResult{endings: map[string]int{}}
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Go(func() {
			body := i%2 == 1
			held, how := slowClient(ctx, source, addr, secret, body, limit)
			mu.Lock()
			defer mu.Unlock()
			kind := "headers"
			if body {
				kind = "body"
				res.bodies = append(res.bodies, held)
			} else {
				res.headers = append(res.headers, held)
			}
			res.endings[kind+": "+how]++
		})
	}
	wg.Wait()
	return res
}
