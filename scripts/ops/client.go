package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// call is one HTTP request of a run.
type call struct {
	method string
	// path is below the replica's base URL, with its query.
	path string
	// token goes in "Authorization: Bearer"; none when empty.
	token string
	// header holds extra headers; its Authorization values replace token's.
	header http.Header
	body   []byte
	// contentType defaults to application/json when there is a body.
	contentType string
}

// result is what came back.
type result struct {
	status  int
	header  http.Header
	code    string // error code of the error envelope
	body    []byte
	latency time.Duration
	err     error
}

// newClient returns an HTTP client for conc concurrent requests whose
// connections leave from the loopback address source ("" for any).
func newClient(conc int, source string) *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	if source != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
	}
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{
			DialContext:         d.DialContext,
			MaxIdleConns:        2 * conc,
			MaxIdleConnsPerHost: conc,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
	}
}

// send makes one request and reads the whole answer.
func send(ctx context.Context, c *http.Client, base string, k call) result {
	var body io.Reader
	if k.body != nil {
		body = bytes.NewReader(k.body)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, base+k.path, body)
	if err != nil {
		return result{err: err}
	}
	if k.token != "" {
		req.Header.Set("Authorization", "Bearer "+k.token)
	}
	for name, vs := range k.header {
		req.Header.Del(name)
		for _, v := range vs {
			req.Header.Add(name, v)
		}
	}
	if k.body != nil {
		ct := k.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return result{err: err, latency: time.Since(start)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	res := result{status: resp.StatusCode, header: resp.Header, body: b, latency: time.Since(start), err: err}
	if resp.StatusCode >= 400 {
		var env struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &env) == nil {
			res.code = env.Error.Code
		}
	}
	return res
}

// errKind names a transport error briefly for the tables.
func errKind(err error) string {
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

// drive runs conc workers until d has passed, ctx ends or maxRequests
// calls of work have started; calls in flight at the deadline finish (each
// is bounded by the client's timeout). It returns how many started.
func drive(ctx context.Context, conc int, d time.Duration, maxRequests int64, work func(ctx context.Context, worker int)) int64 {
	deadline := time.Now().Add(d)
	var started atomic.Int64
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) && started.Add(1) <= maxRequests {
				work(ctx, w)
			}
		}()
	}
	wg.Wait()
	return min(started.Load(), maxRequests)
}
