package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves Go's profiling endpoints (/debug/pprof/...) on addr,
// the FLEET_PPROF_ADDR of `fleetapi serve`, on a listener and mux of their
// own (never on the API's). Profiles reveal internals, so addr must be a
// loopback address such as 127.0.0.1:6060. It returns the bound address
// and a function that stops the server within ctx.
func startPprof(addr string, log *slog.Logger) (string, func(context.Context) error, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("FLEET_PPROF_ADDR %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("FLEET_PPROF_ADDR %q: profiling is served on loopback addresses only", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("FLEET_PPROF_ADDR: %w", err)
	}
	// No write timeout: a CPU profile streams for its whole duration.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof server", slog.Any("error", err))
		}
	}()
	log.Info("pprof listening", slog.String("addr", ln.Addr().String()))
	return ln.Addr().String(), srv.Shutdown, nil
}
