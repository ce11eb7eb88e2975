package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func BenchmarkSign(b *testing.B) {
	body := []byte(`{"type":"notification.created","timestamp":"2026-11-29T16:00:00Z","data":{"id":1,"text":"` + strings.Repeat("x", 400) + `"}}`)
	old, cur := make([]byte, 32), make([]byte, 32)
	for b.Loop() {
		_ = Sign("msg_0123456789abcdef", time.Unix(1614265330, 0), body, cur, old)
	}
}

func BenchmarkSealOpen(b *testing.B) {
	r, err := NewKeyRing(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	secret, aad := make([]byte, 32), []byte("42")
	for b.Loop() {
		s, _ := r.Seal(secret, aad)
		if _, err := r.Open(s, aad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckURL(b *testing.B) {
	c := NewClient(Config{})
	for b.Loop() {
		_ = c.CheckURL("https://hooks.customer.example:8443/fleet/in?tenant=7")
	}
}

// BenchmarkSendLocal is one whole attempt (dial, request, 204, close) to a
// plain-http receiver on 127.0.0.1: the client's own cost per delivery.
func BenchmarkSendLocal(b *testing.B) {
	r := newReceiver(b, false, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
	c := NewClient(Config{AllowHTTP: true, AllowNets: loopback})
	m := message(r.URL)
	for b.Loop() {
		if res := c.Send(context.Background(), m); !res.OK {
			b.Fatal(res)
		}
	}
}
