package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/telemetry"
)

// rawExchange sends raw bytes on a new connection to addr and returns all
// the server answers before it closes the connection.
func rawExchange(t *testing.T, addr, request string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(conn)
	return string(b)
}

// TestWireEdge checks, on the real server, the answers to requests that are
// malformed at the HTTP level. Those that reach the handler get the error
// envelope; the rest are answered by net/http itself before any handler
// runs (docs/decisions.md, "The HTTP edge"), and the test pins exactly
// what it answers, so that a Go release that changes it is noticed.
func TestWireEdge(t *testing.T) {
	db := storagetest.New(t)
	addr, _ := startServe(t, map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0"})
	const ok = "Host: api.example\r\nConnection: close\r\n"
	envelope := []struct{ name, request, status, code string }{
		{"OPTIONS * (the server-wide OPTIONS)", "OPTIONS * HTTP/1.1\r\n" + ok + "\r\n", "404 Not Found", "NOT_FOUND"},
		{"GET *", "GET * HTTP/1.1\r\n" + ok + "\r\n", "404 Not Found", "NOT_FOUND"},
		{"dot-dot segment", "GET /api/v2/x/../me HTTP/1.1\r\n" + ok + "\r\n", "404 Not Found", "NOT_FOUND"},
		{"double slash", "GET /api/v2//me HTTP/1.1\r\n" + ok + "\r\n", "404 Not Found", "NOT_FOUND"},
		{"absolute form, other host", "GET http://elsewhere.example//api/v2/me HTTP/1.1\r\n" + ok + "\r\n", "404 Not Found", "NOT_FOUND"},
		{"unknown method", "BREW /api/v2/me HTTP/1.1\r\n" + ok + "\r\n", "405 Method Not Allowed", "METHOD_NOT_ALLOWED"},
		{"header block between MaxHeaderBytes and its slack", "GET /api/v2/me HTTP/1.1\r\n" + ok +
			"X-Pad: " + strings.Repeat("x", 33<<10) + "\r\n\r\n", "401 Unauthorized", "AUTH_REQUIRED"},
	}
	for _, tt := range envelope {
		t.Run(tt.name, func(t *testing.T) {
			got := rawExchange(t, addr, tt.request)
			head, body, _ := strings.Cut(got, "\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 "+tt.status+"\r\n") {
				t.Fatalf("answer:\n%s", got)
			}
			for _, h := range []string{"Content-Type: application/json", "X-Content-Type-Options: nosniff", "Cache-Control: no-store"} {
				if !strings.Contains(head, "\r\n"+h+"\r\n") {
					t.Errorf("no %s in:\n%s", h, head)
				}
			}
			var env struct {
				Error struct{ Code string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &env); err != nil || env.Error.Code != tt.code {
				t.Fatalf("body %q, want the %s envelope", body, tt.code)
			}
		})
	}
	// Answered by net/http before any handler (server.go, (*conn).serve):
	// the status line, Content-Type text/plain, Connection: close, and a
	// body of plain text. A badRequestError's text goes into both the
	// reason phrase and the body; any other parse error is the bare
	// "400 Bad Request".
	goAnswers := []struct{ name, request, statusLine, body string }{
		{"NUL in a header value", "GET /api/v2/me HTTP/1.1\r\n" + ok + "X-A: a\x00b\r\n\r\n",
			"400 Bad Request", "400 Bad Request"},
		{"CR in a header value", "GET /api/v2/me HTTP/1.1\r\n" + ok + "X-A: a\rb\r\n\r\n",
			"400 Bad Request", "400 Bad Request"},
		{"invalid header name", "GET /api/v2/me HTTP/1.1\r\n" + ok + "X A: b\r\n\r\n",
			"400 Bad Request: invalid header name", "400 Bad Request: invalid header name"},
		{"header block of 100 KB", "GET /api/v2/me HTTP/1.1\r\n" + ok + "X-Pad: " + strings.Repeat("x", 100<<10) + "\r\n\r\n",
			"431 Request Header Fields Too Large", "431 Request Header Fields Too Large"},
		{"malformed request line", "GARBAGE\r\n" + ok + "\r\n",
			"400 Bad Request", "400 Bad Request"},
		{"control character in the target", "GET /api/v2/\x01me HTTP/1.1\r\n" + ok + "\r\n",
			"400 Bad Request", "400 Bad Request"},
		{"no Host header", "GET /api/v2/me HTTP/1.1\r\nConnection: close\r\n\r\n",
			"400 Bad Request: missing required Host header", "400 Bad Request: missing required Host header"},
		{"two Host headers", "GET /api/v2/me HTTP/1.1\r\n" + ok + "Host: b.example\r\n\r\n",
			"400 Bad Request", "400 Bad Request"},
		{"unsupported Transfer-Encoding", "POST /api/v2/passengers HTTP/1.1\r\n" + ok + "Transfer-Encoding: gzip\r\n\r\n",
			"501 Not Implemented", "Unsupported transfer encoding"},
		{"HTTP/2.0 request line", "GET /api/v2/me HTTP/2.0\r\n" + ok + "\r\n",
			"505 HTTP Version Not Supported: unsupported protocol version", "505 HTTP Version Not Supported: unsupported protocol version"},
	}
	for _, tt := range goAnswers {
		t.Run(tt.name, func(t *testing.T) {
			got := rawExchange(t, addr, tt.request)
			want := "HTTP/1.1 " + tt.statusLine + "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" + tt.body
			if got != want {
				t.Fatalf("answer\n%q\nwant\n%q", got, want)
			}
		})
	}
	t.Run("Expect other than 100-continue", func(t *testing.T) {
		got := rawExchange(t, addr, "GET /api/v2/me HTTP/1.1\r\n"+ok+"Expect: tea\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 417 Expectation Failed\r\n") || !strings.HasSuffix(got, "\r\n\r\n") ||
			!strings.Contains(got, "Content-Length: 0\r\n") {
			t.Fatalf("answer:\n%q", got)
		}
	})
}

// TestRedisFallbackCounterAtZero: the counter an alert on Redis outages
// is built on is on /metrics at zero before the first fallback.
func TestRedisFallbackCounterAtZero(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	_, closeLimiter, err := newLimiter(config{RedisURL: "redis://127.0.0.1:6379/0"}, slog.New(slog.DiscardHandler), tel)
	if err != nil {
		t.Fatal(err)
	}
	defer closeLimiter()
	rec := httptest.NewRecorder()
	tel.MetricsHandler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	ok := false
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "fleet_ratelimit_redis_fallbacks_total{") && strings.HasSuffix(line, "} 0") {
			ok = true
		}
	}
	if !ok {
		t.Fatalf("no fleet_ratelimit_redis_fallbacks_total at 0:\n%s", rec.Body.String())
	}
}
