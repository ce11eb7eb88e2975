package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestStartPprof(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, bad := range []string{"0.0.0.0:0", "10.1.2.3:6060", ":6060", "nonsense"} {
		if _, _, err := startPprof(bad, log); err == nil {
			t.Errorf("startPprof(%q) accepted a non-loopback address", bad)
		}
	}
	addr, stop, err := startPprof("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background()) //nolint:errcheck
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("GET /debug/pprof/: %d %.200s", resp.StatusCode, body)
	}
}
