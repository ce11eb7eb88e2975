package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/stats"
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

// result is what came back: the outcome the recorders count, and the
// answer's headers and body.
type result struct {
	stats.Outcome
	header http.Header
	body   []byte
}

// ok reports whether the request was answered with one of statuses.
func (r result) ok(statuses ...int) bool {
	if r.Err != nil {
		return false
	}
	for _, s := range statuses {
		if r.Status == s {
			return true
		}
	}
	return false
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

// send makes one request and reads the whole answer (up to 4 MiB), with
// the error code of an error envelope.
func send(ctx context.Context, c *http.Client, base string, k call) result {
	var body io.Reader
	if k.body != nil {
		body = bytes.NewReader(k.body)
	}
	req, err := http.NewRequestWithContext(ctx, k.method, base+k.path, body)
	if err != nil {
		return result{Outcome: stats.Outcome{Err: err}}
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
		return result{Outcome: stats.Outcome{Err: err, Latency: time.Since(start)}}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	res := result{Outcome: stats.Outcome{Status: resp.StatusCode, Latency: time.Since(start), Err: err}, header: resp.Header, body: b}
	if resp.StatusCode >= 400 {
		res.Code = errorCode(b)
	}
	return res
}

// errorCode is error.code of an error envelope, "" when body is not one.
func errorCode(body []byte) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	return env.Error.Code
}

// bounds are the closed-loop bounds of a phase: conc clients for d, at most
// max requests.
func bounds(conc int, d time.Duration, max int64) stats.Bounds {
	return stats.Bounds{Workers: conc, Duration: d, Requests: max}
}
