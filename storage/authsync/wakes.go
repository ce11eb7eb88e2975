package authsync

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
)

// WakeChannel is the channel on which the statement trigger of
// notifications (migration 20270301000001) announces stored
// notifications; the payload says nothing, a wake is a hint to read.
const WakeChannel = "fleet_notifications"

// WakeOptions tune a WakeListener; zero values take defaults.
type WakeOptions struct {
	// ApplicationName names the connection in pg_stat_activity.
	ApplicationName string
	// Logger receives disconnections; discarded when nil.
	Logger *slog.Logger
	// MinBackoff and MaxBackoff bound the wait before a reconnection
	// (100 ms and 5 s by default).
	MinBackoff, MaxBackoff time.Duration
	// Channel is the channel listened on (WakeChannel when empty).
	Channel string
	// Payload, when not nil, is called with each notification's payload
	// (before wake). It must not wait.
	Payload func(payload string)
	// OnState, when not nil, is called with true once LISTEN is sent and
	// with false when the session is lost.
	OnState func(connected bool)
}

// WakeListener is a replica's one LISTEN session on WakeChannel: every
// notification it receives, and every (re)connection (what was stored
// while it was away), calls wake, which must not wait (api.Wakeups.Wake).
// The streams also poll every second, so a lost session delays them by at
// most that (docs/operations.md, "Streams").
type WakeListener struct {
	dsn  string
	wake func()
	opts WakeOptions
}

// NewWakeListener returns a listener on the database at dsn (the primary
// itself: LISTEN does not work through a transaction pooler) calling wake.
// Call Run to start it.
func NewWakeListener(dsn string, wake func(), opts WakeOptions) *WakeListener {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.Channel == "" {
		opts.Channel = WakeChannel
	}
	if opts.ApplicationName == "" {
		opts.ApplicationName = "fleetapi notification listener"
	}
	return &WakeListener{dsn: dsn, wake: wake, opts: opts}
}

// Run keeps the session until ctx ends, then returns nil.
func (l *WakeListener) Run(ctx context.Context) error {
	backoff := l.opts.MinBackoff
	for {
		listened, err := l.session(ctx)
		if l.opts.OnState != nil && listened {
			l.opts.OnState(false)
		}
		if ctx.Err() != nil {
			return nil
		}
		if listened {
			backoff = l.opts.MinBackoff
		}
		l.opts.Logger.Warn("notification listener disconnected; streams poll", slog.Any("error", err), slog.Duration("retry_in", backoff))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, l.opts.MaxBackoff)
	}
}

// session listens until the connection fails; listened reports whether
// LISTEN was sent.
func (l *WakeListener) session(ctx context.Context) (listened bool, err error) {
	connector := pgdriver.NewConnector(
		pgdriver.WithDSN(l.dsn),
		pgdriver.WithApplicationName(l.opts.ApplicationName),
		pgdriver.WithDialTimeout(5*time.Second),
		pgdriver.WithReadTimeout(10*time.Second),
		pgdriver.WithWriteTimeout(10*time.Second),
	)
	sdb := bun.NewDB(sql.OpenDB(connector), pgdialect.New())
	ln := pgdriver.NewListener(sdb)
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer func() {
		stop()
		_ = ln.Close()
		_ = sdb.Close()
	}()
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = ln.Listen(lctx, l.opts.Channel)
	cancel()
	if err != nil {
		return false, err
	}
	if l.opts.OnState != nil {
		l.opts.OnState(true)
	}
	l.wake() // what was stored before LISTEN was in force
	for {
		_, payload, err := ln.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return true, err
		}
		if l.opts.Payload != nil {
			l.opts.Payload(payload)
		}
		l.wake()
	}
}
