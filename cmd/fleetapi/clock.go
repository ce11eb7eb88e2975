package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/fleetapi/fleetapi/clock"
	"github.com/fleetapi/fleetapi/storage"
)

// startClock runs the clock's rules (package clock) every interval on
// this replica while it holds their lease, until the returned function
// is called (which waits for a sweep in progress to end and releases the
// lease); an interval of 0 (or below: a flag) starts nothing. The notifications a sweep
// creates are not counted in usage yet: usage_daily's notifications
// column comes with the ingest (clock.Options.Usage is where it plugs in).
func startClock(ctx context.Context, interval time.Duration, store *storage.Store, log *slog.Logger) func() {
	if interval <= 0 {
		return func() {}
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		clock.Run(cctx, clock.Options{Store: store, Interval: interval, Logger: log})
	}()
	return func() {
		cancel()
		<-done
	}
}
