package main

import (
	"context"
	"log/slog"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/authsync"
	"github.com/fleetapi/fleetapi/telemetry"
	"github.com/fleetapi/fleetapi/tenancy"
)

// startAuthCache gives auth a cache of principals of cfg.AuthCacheSize
// entries, kept consistent by a listener on cfg.listenURL() running until
// the returned stop is called. sync waits for that replica's cache to
// catch up with committed changes (api.Config.AuthSync). With a size of
// 0 there is no cache, sync is nil and stop does nothing. The listener
// connects in the background: until it has, authentication bypasses the
// cache, so a listener URL that cannot be reached slows authentication
// down (logged) but stops nothing.
func startAuthCache(ctx context.Context, cfg config, auth *tenancy.Authenticator, log *slog.Logger, tel *telemetry.Providers) (sync func(context.Context) error, stop func(), err error) {
	if cfg.AuthCacheSize == 0 {
		log.Info("auth cache off")
		return nil, func() {}, nil
	}
	cache := tenancy.NewPrincipalCache(cfg.AuthCacheSize, tenancy.DefaultCacheMaxAge)
	listener := authsync.NewListener(cfg.listenURL(), cache, authsync.ListenerOptions{Logger: log})
	if err := listener.RegisterMetrics(tel.Meter); err != nil {
		listener.Close()
		return nil, nil, err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = listener.Run(lctx) // returns nil when lctx ends
	}()
	auth.Cache = cache
	log.Info("auth cache on", slog.Int("size", cfg.AuthCacheSize))
	// The listener's errors are the driver's: storage's translation
	// classifies them for the log (a database gone is ErrUnavailable).
	sync = func(ctx context.Context) error { return storage.Translate(listener.Sync(ctx)) }
	return sync, func() {
		cancel()
		<-done
		listener.Close()
	}, nil
}
