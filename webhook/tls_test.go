package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestSendTLSFailures: each way the receiver's TLS can be wrong fails the
// attempt with class tls and a text that says which; the same receiver
// with a trusted, valid certificate for the name succeeds.
func TestSendTLSFailures(t *testing.T) {
	noLeak(t)
	ok := func(http.ResponseWriter, *http.Request) {}
	good := newReceiver(t, true, ok)
	expired := newReceiverTLS(t, &tls.Config{Certificates: []tls.Certificate{expiredCert(t)}}, ok)
	wantsClientCert := newReceiverTLS(t, &tls.Config{ClientAuth: tls.RequireAnyClientCert}, ok)
	dns := &dnsServer{answer: func(string) []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} }}
	pool := poolOf(good)
	pool.AddCert(expired.Certificate())
	c := NewClient(Config{AllowNets: loopback, RootCAs: pool, Resolver: dns.resolver(t), Timeout: 20 * time.Second})
	for _, tc := range []struct{ name, url, err string }{
		{"wrong_name", "https://other.example.org:" + good.port() + "/", "tls: certificate is not valid for the host"},
		{"expired", "https://example.com:" + expired.port() + "/", "tls: certificate is invalid or expired"},
		{"client_cert_required", "https://example.com:" + wantsClientCert.port() + "/", "tls: handshake refused by the receiver"},
	} {
		if res := c.Send(context.Background(), message(tc.url)); res.OK || res.Class != ClassTLS || res.Err != tc.err {
			t.Errorf("%s: Send = %+v, want %q", tc.name, res, tc.err)
		}
	}
	if res := c.Send(context.Background(), message("https://example.com:"+good.port()+"/")); !res.OK {
		t.Errorf("the trusted receiver: Send = %+v, want OK", res)
	}
	if n := good.requests.Load() + expired.requests.Load() + wantsClientCert.requests.Load(); n != 1 {
		t.Errorf("%d requests reached the receivers, want 1 (the trusted one)", n)
	}
}

// expiredCert is a self-signed certificate for example.com that expired
// yesterday.
func expiredCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "example.com"},
		DNSNames:              []string{"example.com"},
		NotBefore:             time.Now().Add(-48 * time.Hour),
		NotAfter:              time.Now().Add(-24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
