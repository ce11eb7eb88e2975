package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Defaults of Config.
const (
	DefaultTimeout     = 15 * time.Second
	DefaultMaxResponse = 64 << 10
	DefaultUserAgent   = "fleetapi-webhooks/1"
	// maxHeaderBytes bounds a receiver's response headers.
	maxHeaderBytes = 16 << 10
	// maxRetryAfter caps a receiver's Retry-After.
	maxRetryAfter = time.Hour
)

// Config is the delivery client's configuration (cmd reads it from the
// environment: FLEET_WEBHOOK_ALLOW_HTTP, FLEET_WEBHOOK_ALLOW_NETS).
type Config struct {
	// AllowHTTP allows plain http URLs besides https.
	AllowHTTP bool
	// AllowNets are networks allowed although inside a refused range.
	AllowNets []netip.Prefix
	// Timeout bounds one attempt whole: dial, TLS, headers and body.
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxResponse is the most response bytes read; zero means
	// DefaultMaxResponse.
	MaxResponse int64
	// RootCAs verify receivers' certificates; nil means the system's.
	RootCAs *x509.CertPool
	// UserAgent is sent with every delivery; empty means DefaultUserAgent.
	UserAgent string
	// Resolver resolves receivers' host names; nil means the system's. Tests
	// point it at a local DNS server; an operator never needs it.
	Resolver *net.Resolver
}

// Client sends deliveries. It is safe for concurrent use; it keeps no
// connection between attempts (see NewClient).
type Client struct {
	cfg       Config
	transport *http.Transport
	http      *http.Client
}

// NewClient returns a client for cfg, with its defaults filled in.
//
// Its transport takes no proxy from the environment, dials through a
// net.Dialer whose Control hook refuses any address outside the allowed
// ranges (the address actually connected, after resolution, for every
// address tried), speaks HTTP/1.1 only, never follows redirects and keeps no
// idle connection: every attempt resolves the host again and connects anew
// (docs/design.md §14 "the host resolved at each delivery"), and nothing of a
// hostile receiver survives its attempt.
func NewClient(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponse <= 0 {
		cfg.MaxResponse = DefaultMaxResponse
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	c := &Client{cfg: cfg}
	dialer := &net.Dialer{
		Timeout:        cfg.Timeout,
		KeepAlive:      -1,
		Resolver:       cfg.Resolver,
		ControlContext: c.control,
	}
	c.transport = &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		ExpectContinueTimeout:  0,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxIdleConns:           1,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
		ForceAttemptHTTP2:      false,
		// A non-nil empty map turns HTTP/2 off: one request per connection.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	c.http = &http.Client{
		Transport: c.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c
}

// control is the dialer's Control hook: it runs after resolution, for every
// address tried, before the connection is made.
func (c *Client) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusedError{"invalid address"}
	}
	if why := refusedReason(ap.Addr(), c.cfg.AllowNets); why != "" {
		return &refusedError{why}
	}
	return nil
}

// refusedError is the Control hook's refusal; it never names the address
// (the integrator should not learn what internal names resolve to).
type refusedError struct{ why string }

func (e *refusedError) Error() string { return "address refused (" + e.why + ")" }

// Message is one attempt of a delivery.
type Message struct {
	// URL is the webhook's URL.
	URL string
	// ID is the webhook-id header, stable across the retries of one
	// notification.
	ID string
	// Timestamp is the attempt's webhook-timestamp (sent in Unix seconds).
	Timestamp time.Time
	// Body is the JSON payload.
	Body []byte
	// Secrets sign the message: the current secret first, then the old one
	// during a rotation.
	Secrets [][]byte
}

// Result is the outcome of one attempt.
type Result struct {
	// OK is true only for a 2xx response.
	OK bool
	// Status is the response's status code; 0 when there was no response.
	Status int
	// Duration is the attempt's measured duration.
	Duration time.Duration
	// Err says why the attempt failed ("" when OK): short, stable and safe
	// to store and show (never a secret, a body or an address).
	Err string
	// Class is Err's class (empty when OK), for metrics.
	Class Class
	// RetryAfter is a 429 or 503 response's Retry-After (seconds or an HTTP
	// date), at most one hour; 0 when absent or invalid.
	RetryAfter time.Duration
}

// Send makes one attempt: POST m.URL with the Standard Webhooks headers,
// within Config.Timeout. The URL is checked again (CheckURL), and the
// address connected to is checked at dial time. A 2xx is success; a redirect
// is a failure and is never followed. At most MaxResponse bytes of the
// response are read; the connection is then closed.
func (c *Client) Send(ctx context.Context, m Message) Result {
	start := time.Now()
	if err := c.CheckURL(m.URL); err != nil {
		return Result{Duration: time.Since(start), Err: string(ClassURL) + ": " + err.(*URLError).Reason, Class: ClassURL}
	}
	r := c.send(ctx, m)
	r.Duration = time.Since(start)
	return r
}

// send is Send without the URL check: the dial-time check alone guards it.
func (c *Client) send(ctx context.Context, m Message) Result {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return failure(ClassURL, "not a valid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Webhook-Id", m.ID)
	req.Header.Set("Webhook-Timestamp", strconv.FormatInt(m.Timestamp.Unix(), 10))
	req.Header.Set("Webhook-Signature", Sign(m.ID, m.Timestamp, m.Body, m.Secrets...))
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return classify(ctx, err)
	}
	// Read (and drop) at most MaxResponse bytes; closing the body then
	// closes the connection (no keep-alive), whatever remains unread.
	_, _ = io.CopyN(io.Discard, resp.Body, c.cfg.MaxResponse)
	_ = resp.Body.Close()
	r := Result{Status: resp.StatusCode}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.OK = true
		return r
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		r.Class = ClassRedirect
		r.Err = string(ClassRedirect) + ": " + strconv.Itoa(resp.StatusCode) + " not followed"
	default:
		r.Class = ClassStatus
		r.Err = string(ClassStatus) + ": " + strconv.Itoa(resp.StatusCode)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return r
}

// retryAfter reads a Retry-After value: delay seconds or an HTTP date,
// capped at maxRetryAfter; 0 when absent, invalid or in the past.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// delay-seconds is 1*DIGIT, unbounded (RFC 9110 10.2.3): a value
		// beyond uint64 asks for the longest wait, not for none.
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now).Round(time.Second)
	}
	return max(0, min(d, maxRetryAfter))
}
