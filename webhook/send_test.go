package webhook

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// loopback allows the test receivers on 127.0.0.1.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func message(url string) Message {
	return Message{URL: url, ID: "msg_1", Timestamp: time.Unix(1614265330, 0), Body: []byte(`{"type":"notification.created"}`), Secrets: [][]byte{[]byte("0123456789abcdef01234567")}}
}

func poolOf(r *receiver) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(r.Certificate())
	return pool
}

// TestSendDelivers: a 2xx over https reaches the receiver with the Standard
// Webhooks headers and a signature it can verify.
func TestSendDelivers(t *testing.T) {
	noLeak(t)
	var got http.Header
	var body []byte
	r := newReceiver(t, true, func(w http.ResponseWriter, req *http.Request) {
		got = req.Header.Clone()
		body, _ = io.ReadAll(req.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	c := NewClient(Config{AllowNets: loopback, RootCAs: poolOf(r), UserAgent: "fleet-test/1"})
	m := message(r.URL + "/hook?x=1")
	before := runtime.NumGoroutine()
	res := c.Send(context.Background(), m)
	settles(t, before) // no idle connection kept
	if !res.OK || res.Status != 204 || res.Err != "" || res.Class != "" || res.Duration <= 0 {
		t.Fatalf("Send = %+v, want OK 204", res)
	}
	want := map[string]string{
		"Content-Type":      "application/json",
		"Webhook-Id":        "msg_1",
		"Webhook-Timestamp": "1614265330",
		"Webhook-Signature": Sign(m.ID, m.Timestamp, m.Body, m.Secrets...),
		"User-Agent":        "fleet-test/1",
	}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, got.Get(k), v)
		}
	}
	if string(body) != string(m.Body) {
		t.Errorf("body %q, want %q", body, m.Body)
	}
}

// TestSendRefusedURLs: every URL CheckURL refuses is refused by Send too,
// before any connection (the receiver listening on 127.0.0.1 gets nothing).
func TestSendRefusedURLs(t *testing.T) {
	noLeak(t)
	r := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {})
	c := NewClient(Config{})
	for _, tc := range refusedURLs {
		u := strings.Replace(tc.url, "127.0.0.1/", "127.0.0.1:"+r.port()+"/", 1)
		res := c.Send(context.Background(), message(u))
		if res.OK || res.Class != ClassURL || !strings.HasPrefix(res.Err, "url: ") {
			t.Errorf("%s: Send(%.60q) = %+v, want a url failure", tc.name, u, res)
		}
	}
	r.untouched(t)
}

// TestSendRefusedAtDial: with CheckURL bypassed (send), every loopback form
// pointing at a live receiver's port is refused by the dial hook (or does
// not resolve), and the receiver gets no connection. No packet leaves the
// machine: the names resolve through /etc/hosts or a local DNS server.
func TestSendRefusedAtDial(t *testing.T) {
	noLeak(t)
	r := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {})
	dns := &dnsServer{answer: func(name string) []netip.Addr {
		switch name {
		case "loop.example.com":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		case "both.example.com":
			return []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
		case "mapped.example.com":
			return []netip.Addr{netip.MustParseAddr("::ffff:127.0.0.1")}
		case "meta.example.com":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}
		}
		if strings.HasSuffix(name, "localhost") { // a resolver that answers for them
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
		}
		return nil
	}}
	c := NewClient(Config{AllowHTTP: true, Resolver: dns.resolver(t), Timeout: 5 * time.Second})
	p := r.port()
	for _, tc := range []struct {
		host  string
		class Class
	}{
		{"127.0.0.1", ClassRefused},
		{"127.0.0.2", ClassRefused},
		{"[::1]", ClassRefused},
		{"[::ffff:127.0.0.1]", ClassRefused},
		{"[0:0:0:0:0:ffff:7f00:1]", ClassRefused},
		{"0.0.0.0", ClassRefused},
		{"localhost", ClassRefused},
		{"LOCALHOST.", ClassRefused},
		{"foo.localhost", ClassRefused},
		{"loop.example.com", ClassRefused},
		{"both.example.com", ClassRefused},
		{"mapped.example.com", ClassRefused},
		{"meta.example.com", ClassRefused},
		{"169.254.169.254", ClassRefused},
		{"10.0.0.1", ClassRefused},
		{"[fe80::1]", ClassRefused},
		{"127.1", ""},
		{"2130706433", ""},
		{"0x7f000001", ""},
		{"0177.0.0.1", ""},
		{"nowhere.example.com", ClassDNS},
	} {
		res := c.send(context.Background(), message("http://"+tc.host+":"+p+"/"))
		if res.OK || tc.class != "" && res.Class != tc.class || tc.class == "" && res.Class != ClassRefused && res.Class != ClassDNS {
			t.Errorf("send to %s = %+v, want class %q", tc.host, res, tc.class)
		}
		if strings.Contains(res.Err, "127.") || strings.Contains(res.Err, "::") {
			t.Errorf("send to %s: Err %q names an address", tc.host, res.Err)
		}
	}
	r.untouched(t)
	if dns.queries.Load() == 0 {
		t.Error("the local DNS server was never asked: the test did not exercise resolution")
	}
}

// TestSendRebinding: a name whose DNS answer changes is judged by the
// address of each connection. With only 127.0.0.1 allowed, the first answer
// (127.0.0.1) reaches the receiver; the next (127.0.0.2, loopback, not
// allowed) is refused at dial, and the receiver on 127.0.0.2 gets nothing.
func TestSendRebinding(t *testing.T) {
	noLeak(t)
	good := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {})
	ln, err := net.Listen("tcp", "127.0.0.2:"+good.port())
	if err != nil {
		t.Fatalf("cannot listen on 127.0.0.2 with the same port: %v", err)
	}
	bad := &receiver{Server: &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}}}
	bad.Config.ConnState = func(net.Conn, http.ConnState) { bad.conns.Add(1) }
	bad.Start()
	t.Cleanup(bad.Close)
	answers := []string{"127.0.0.1", "127.0.0.2"}
	asked := 0
	dns := &dnsServer{answer: func(name string) []netip.Addr {
		if name != "rebind.example.com" {
			return nil
		}
		a := answers[min(asked/2, 1)] // A and AAAA per lookup
		asked++
		return []netip.Addr{netip.MustParseAddr(a)}
	}}
	c := NewClient(Config{AllowHTTP: true, AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Resolver: dns.resolver(t)})
	u := "http://rebind.example.com:" + good.port() + "/"
	if err := c.CheckURL(u); err != nil {
		t.Fatal(err)
	}
	if res := c.Send(context.Background(), message(u)); !res.OK {
		t.Fatalf("first Send = %+v, want OK", res)
	}
	for i := 0; i < 3; i++ {
		if res := c.Send(context.Background(), message(u)); res.OK || res.Class != ClassRefused || res.Err != "refused address: loopback" {
			t.Fatalf("Send after rebinding = %+v, want refused address: loopback", res)
		}
	}
	if good.requests.Load() != 1 {
		t.Errorf("allowed receiver got %d requests, want 1", good.requests.Load())
	}
	bad.untouched(t)
}

// TestSendAllowNetsAndHTTP: AllowNets 127.0.0.0/8 lets Send reach a
// receiver on 127.0.0.1, by address and by a name resolving there (TLS then
// verifies the name); without AllowHTTP an http URL is refused.
func TestSendAllowNetsAndHTTP(t *testing.T) {
	noLeak(t)
	plain := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {})
	tlsR := newReceiver(t, true, func(w http.ResponseWriter, _ *http.Request) {})
	dns := &dnsServer{answer: func(name string) []netip.Addr {
		if name == "example.com" { // the name in httptest's certificate
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		}
		return nil
	}}
	resolver := dns.resolver(t)
	allowed := NewClient(Config{AllowHTTP: true, AllowNets: loopback, RootCAs: poolOf(tlsR), Resolver: resolver})
	for _, u := range []string{plain.URL, tlsR.URL, "https://example.com:" + tlsR.port() + "/"} {
		if res := allowed.Send(context.Background(), message(u)); !res.OK || res.Status != 200 {
			t.Errorf("Send(%s) = %+v, want OK", u, res)
		}
	}
	httpsOnly := NewClient(Config{AllowNets: loopback, RootCAs: poolOf(tlsR)})
	if res := httpsOnly.Send(context.Background(), message(plain.URL)); res.OK || res.Err != "url: scheme must be https" {
		t.Errorf("http without AllowHTTP = %+v", res)
	}
	notAllowed := NewClient(Config{AllowHTTP: true, Resolver: resolver, RootCAs: poolOf(tlsR)})
	if res := notAllowed.Send(context.Background(), message("https://example.com:"+tlsR.port()+"/")); res.Class != ClassRefused {
		t.Errorf("without AllowNets = %+v, want refused address", res)
	}
	if plain.requests.Load() != 1 || tlsR.requests.Load() != 2 {
		t.Errorf("requests: plain %d, tls %d; want 1 and 2", plain.requests.Load(), tlsR.requests.Load())
	}
}

// TestSendStatus: non-2xx answers fail with their status; Retry-After of a
// 429 or 503 is read in seconds or as an HTTP date and capped at an hour;
// redirects are failures and their Location is never followed.
func TestSendStatus(t *testing.T) {
	noLeak(t)
	target := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {})
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name       string
		status     int
		header     map[string]string
		err        string
		class      Class
		retryAfter [2]time.Duration // bounds
	}{
		{"200", 200, nil, "", "", [2]time.Duration{}},
		{"202", 202, nil, "", "", [2]time.Duration{}},
		{"500", 500, nil, "status: 500", ClassStatus, [2]time.Duration{}},
		{"404", 404, nil, "status: 404", ClassStatus, [2]time.Duration{}},
		{"410", 410, nil, "status: 410", ClassStatus, [2]time.Duration{}},
		{"429_seconds", 429, map[string]string{"Retry-After": "120"}, "status: 429", ClassStatus, [2]time.Duration{120 * time.Second, 120 * time.Second}},
		{"429_date", 429, map[string]string{"Retry-After": date}, "status: 429", ClassStatus, [2]time.Duration{80 * time.Second, 91 * time.Second}},
		{"503_capped", 503, map[string]string{"Retry-After": "86400"}, "status: 503", ClassStatus, [2]time.Duration{time.Hour, time.Hour}},
		{"503_huge", 503, map[string]string{"Retry-After": "999999999999999999999"}, "status: 503", ClassStatus, [2]time.Duration{time.Hour, time.Hour}}, // beyond uint64: the longest wait, like 86400
		{"429_past", 429, map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, "status: 429", ClassStatus, [2]time.Duration{}},
		{"429_invalid", 429, map[string]string{"Retry-After": "soon"}, "status: 429", ClassStatus, [2]time.Duration{}},
		{"429_negative", 429, map[string]string{"Retry-After": "-5"}, "status: 429", ClassStatus, [2]time.Duration{}},
		{"500_retry_after_ignored", 500, map[string]string{"Retry-After": "120"}, "status: 500", ClassStatus, [2]time.Duration{}},
		{"301", 301, map[string]string{"Location": target.URL + "/moved"}, "redirect: 301 not followed", ClassRedirect, [2]time.Duration{}},
		{"302", 302, map[string]string{"Location": target.URL + "/moved"}, "redirect: 302 not followed", ClassRedirect, [2]time.Duration{}},
		{"307", 307, map[string]string{"Location": target.URL + "/moved"}, "redirect: 307 not followed", ClassRedirect, [2]time.Duration{}},
		{"308", 308, map[string]string{"Location": target.URL + "/moved"}, "redirect: 308 not followed", ClassRedirect, [2]time.Duration{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReceiver(t, false, func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, "secret-looking body "+strconv.Itoa(tc.status))
			})
			c := NewClient(Config{AllowHTTP: true, AllowNets: loopback})
			before := runtime.NumGoroutine()
			res := c.Send(context.Background(), message(r.URL))
			settles(t, before)
			if res.Status != tc.status || res.OK != (tc.err == "") || res.Err != tc.err || res.Class != tc.class {
				t.Errorf("Send = %+v, want status %d err %q class %q", res, tc.status, tc.err, tc.class)
			}
			if res.RetryAfter < tc.retryAfter[0] || res.RetryAfter > tc.retryAfter[1] {
				t.Errorf("RetryAfter = %s, want %s..%s", res.RetryAfter, tc.retryAfter[0], tc.retryAfter[1])
			}
		})
	}
	target.untouched(t)
}

// TestSendEveryRefusedRange dials the first, a middle and the last address
// of every refused range (and the IPv6 forms that embed a refused IPv4
// address) with CheckURL bypassed: the Control hook refuses each before the
// connection is made, so no packet leaves the machine.
func TestSendEveryRefusedRange(t *testing.T) {
	noLeak(t)
	c := NewClient(Config{AllowHTTP: true, Timeout: 5 * time.Second})
	var addrs []netip.Addr
	for _, r := range append(append([]refusedRange(nil), refusedV4...), refusedV6...) {
		first, last := r.prefix.Masked().Addr(), lastAddr(r.prefix)
		mid := first
		for i := 0; i < 37; i++ {
			mid = mid.Next()
		}
		addrs = append(addrs, first, mid, last)
	}
	for _, s := range []string{"::", "::1", "::127.0.0.1", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1", "ff02::1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:a00:1::1", "2002:7f00:1::", "100::1", "5f00::1"} {
		addrs = append(addrs, netip.MustParseAddr(s))
	}
	for _, a := range addrs {
		res := c.send(context.Background(), message("http://"+netip.AddrPortFrom(a, 9).String()+"/"))
		if res.Class != ClassRefused || !strings.HasPrefix(res.Err, "refused address: ") {
			t.Errorf("send to %s = %+v, want refused address", a, res)
		}
	}
}
