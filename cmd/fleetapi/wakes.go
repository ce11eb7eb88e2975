package main

import (
	"context"
	"log/slog"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage/authsync"
)

// startNotificationWakes starts the replica's one LISTEN session on the
// notification channel (authsync.WakeChannel, on cfg.listenURL() like the
// authentication cache's) that wakes the open notification streams; it
// runs until the returned stop is called. While it is disconnected the
// streams poll every second. also are woken too (the webhook sender).
func startNotificationWakes(ctx context.Context, cfg config, log *slog.Logger, also ...func()) (*api.Wakeups, func()) {
	wakeups := api.NewWakeups()
	wake := func() {
		wakeups.Wake()
		for _, f := range also {
			f()
		}
	}
	listener := authsync.NewWakeListener(cfg.listenURL(), wake, authsync.WakeOptions{Logger: log})
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = listener.Run(lctx)
	}()
	return wakeups, func() {
		cancel()
		<-done
	}
}
