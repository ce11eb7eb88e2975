package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestServeHTTPFloor: the floor serves its fixed body on every path until
// its context ends, then returns without error.
func TestServeHTTPFloor(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHTTPFloor(ctx, []string{"--addr", addr}, nil, io.Discard) }()
	get := func(path string) (*http.Response, []byte, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, b, err
	}
	for i := 0; ; i++ {
		if _, _, err := get("/"); err == nil {
			break
		} else if i == 500 {
			cancel()
			t.Fatalf("not serving on %s: %v (%v)", addr, err, <-done)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, path := range []string{"/api/v2/me", "/anything"} {
		resp, b, err := get(path)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.HasPrefix(b, []byte(`{"data":`)) {
			t.Errorf("%s: %d %q %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("after cancel: %v", err)
	}
}
