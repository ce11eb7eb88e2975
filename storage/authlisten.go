package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/fleetapi/fleetapi/tenancy"
)

// AuthChannel is the notification channel on which the triggers of
// migration 20261210000001 announce changes to what principals are made
// of: payload "token:<id>", "account:<id>" or "all".
const AuthChannel = "fleet_auth"

// startPingEvery is how often a new listener connection sends its
// start-up ping again until one comes back.
const startPingEvery = 100 * time.Millisecond

// syncPrefix starts the payloads the listener sends itself: a sync
// barrier, a start-up check, a health ping.
const syncPrefix = "sync:"

// AuthListenerOptions tune an AuthListener; zero values take defaults.
type AuthListenerOptions struct {
	// ApplicationName names the listener's connection in pg_stat_activity
	// ("fleetapi auth listener" when empty).
	ApplicationName string
	// PingInterval is how long the connection may stay silent before the
	// listener checks it with a notification to itself (2s); PingTimeout
	// how long that notification may take to come back before the
	// connection is taken as lost (2s). Together they bound how long a
	// connection that died without a word goes unnoticed.
	PingInterval, PingTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts, doubling from the first to the second (100ms, 10s).
	MinBackoff, MaxBackoff time.Duration
	// Logger receives connection losses and recoveries (discard when nil).
	Logger *slog.Logger
	// OnState, when not nil, is called on the listener's goroutine each
	// time the cache becomes trusted (true) or distrusted (false).
	OnState func(connected bool)
}

func (o AuthListenerOptions) withDefaults() AuthListenerOptions {
	if o.ApplicationName == "" {
		o.ApplicationName = "fleetapi auth listener"
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 2 * time.Second
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = 2 * time.Second
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(10*time.Second, o.MinBackoff)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// AuthListener keeps a tenancy.PrincipalCache consistent with the
// database: it LISTENs on AuthChannel on a connection of its own and
// applies each notification to the cache. The cache is trusted only while
// the listener is known to receive every notification: from the moment a
// notification it sent itself after LISTEN came back (so LISTEN is in
// force; the cache is emptied then) until the connection fails or stays
// silent past a ping. Then the cache is distrusted (bypassed and emptied)
// and the listener reconnects with backoff.
type AuthListener struct {
	// db sends the listener's own notifications (pings, Sync); conf is
	// the connection configuration of each LISTEN session.
	db    *bun.DB
	conf  pgdriver.Config
	cache *tenancy.PrincipalCache
	opts  AuthListenerOptions

	connected atomic.Bool
	mu        sync.Mutex
	waiters   map[string]chan struct{}
}

// NewAuthListener returns a listener for cache on the database at dsn,
// which must be the primary itself: LISTEN does not work through a
// transaction pooler. Call Run to start it and Close when done.
func NewAuthListener(dsn string, cache *tenancy.PrincipalCache, opts AuthListenerOptions) *AuthListener {
	opts = opts.withDefaults()
	connector := pgdriver.NewConnector(
		pgdriver.WithDSN(dsn),
		pgdriver.WithApplicationName(opts.ApplicationName),
		pgdriver.WithDialTimeout(5*time.Second),
		pgdriver.WithReadTimeout(10*time.Second),
		pgdriver.WithWriteTimeout(10*time.Second),
		pgdriver.WithBufferSize(8192),
	)
	sqldb := sql.OpenDB(connector)
	sqldb.SetMaxOpenConns(2)
	return &AuthListener{
		db:      bun.NewDB(sqldb, pgdialect.New()),
		conf:    *connector.Config(),
		cache:   cache,
		opts:    opts,
		waiters: map[string]chan struct{}{},
	}
}

// Close releases the listener's connections; call it after Run returned.
func (l *AuthListener) Close() error { return l.db.Close() }

// Connected reports whether the listener is connected and the cache
// synchronised (the cache is trusted).
func (l *AuthListener) Connected() bool { return l.connected.Load() }

// Run keeps the listener connected until ctx ends, then distrusts the
// cache and returns nil.
func (l *AuthListener) Run(ctx context.Context) error {
	backoff := l.opts.MinBackoff
	for {
		synced, err := l.session(ctx)
		l.setConnected(false)
		if ctx.Err() != nil {
			return nil
		}
		if synced {
			backoff = l.opts.MinBackoff
		}
		l.opts.Logger.Warn("auth cache listener disconnected; authentication bypasses the cache",
			slog.Any("error", err), slog.Duration("retry_in", backoff))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, l.opts.MaxBackoff)
	}
}

// session connects, LISTENs, synchronises and applies notifications until
// the connection fails; synced reports whether it got that far.
func (l *AuthListener) session(ctx context.Context) (synced bool, err error) {
	// pgdriver's Listener reconnects by itself, inside the receive that met
	// the error, before returning it: the cache would stay trusted while it
	// dials and notifications are lost. Its connector here dials once; the
	// reconnection fails at once and the loss is seen at once.
	conf := l.conf
	dial := conf.Dialer
	var dialed atomic.Bool
	conf.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dialed.Swap(true) {
			return nil, errors.New("auth cache listener: session over")
		}
		return dial(ctx, network, addr)
	}
	sdb := bun.NewDB(sql.OpenDB(pgdriver.NewConnector(pgdriver.WithConfig(&conf))), pgdialect.New())
	ln := pgdriver.NewListener(sdb)
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer func() {
		stop()
		_ = ln.Close()
		_ = sdb.Close()
	}()
	lctx, cancel := context.WithTimeout(ctx, l.opts.PingTimeout+5*time.Second)
	err = ln.Listen(lctx, AuthChannel)
	cancel()
	if err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	// LISTEN is only written; it is in force once a notification sent
	// after it comes back. Until then the cache stays untrusted, and the
	// start-up ping is sent again every startPingEvery: one sent before the
	// server ran the LISTEN (a warm connection can beat a new one) is
	// never delivered. pending holds the nonces awaited, deadline when the
	// first of them was sent plus PingTimeout.
	pending := map[string]bool{}
	send := func() error {
		nonce, err := l.ping(ctx)
		if err == nil {
			pending[nonce] = true
		}
		return err
	}
	if err := send(); err != nil {
		return false, err
	}
	deadline := time.Now().Add(l.opts.PingTimeout)
	for {
		wait := l.opts.PingInterval
		if len(pending) > 0 {
			if wait = time.Until(deadline); wait <= 0 {
				return synced, errors.New("auth cache listener: ping timed out")
			}
			if !synced {
				wait = min(wait, startPingEvery)
			}
		}
		_, payload, err := ln.ReceiveTimeout(ctx, wait)
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return synced, fmt.Errorf("receive: %w", err)
			}
			if len(pending) == 0 { // silent for PingInterval: check the connection
				deadline = time.Now().Add(l.opts.PingTimeout)
			}
			if len(pending) == 0 || !synced {
				if err := send(); err != nil {
					return synced, err
				}
			}
			continue
		}
		if nonce, ok := strings.CutPrefix(payload, syncPrefix); ok && pending[nonce] {
			clear(pending)
			if !synced {
				synced = true
				l.cache.Trust()
				l.setConnected(true)
				l.opts.Logger.Info("auth cache listener connected")
			}
		}
		l.apply(payload)
	}
}

// ping sends a sync notification to the listener itself and returns its
// nonce.
func (l *AuthListener) ping(ctx context.Context) (string, error) {
	nonce := newNonce()
	pctx, cancel := context.WithTimeout(ctx, l.opts.PingTimeout)
	defer cancel()
	if err := pgdriver.Notify(pctx, l.db, AuthChannel, syncPrefix+nonce); err != nil {
		return "", fmt.Errorf("ping: %w", err)
	}
	return nonce, nil
}

// apply applies one notification to the cache. An unknown payload clears
// it: whatever changed, nothing stale stays.
func (l *AuthListener) apply(payload string) {
	kind, arg, _ := strings.Cut(payload, ":")
	switch kind {
	case "sync":
		l.mu.Lock()
		if ch, ok := l.waiters[arg]; ok {
			close(ch)
			delete(l.waiters, arg)
		}
		l.mu.Unlock()
		return
	case "token", "account":
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			break
		}
		if kind == "token" {
			l.cache.InvalidateToken(id)
		} else {
			l.cache.InvalidateAccount(id)
		}
		return
	case "all":
		l.cache.Clear()
		return
	}
	l.opts.Logger.Warn("auth cache listener: unknown notification; cache cleared", slog.String("payload", payload))
	l.cache.Clear()
}

// Sync returns once the cache serves nothing older than the changes
// committed before the call: it sends a notification through the database
// and waits for the listener to receive it (PostgreSQL delivers the
// notifications of committed transactions in commit order, so every change
// before it has been applied by then). While the listener is disconnected
// the cache is bypassed and empty, and Sync returns at once; a disconnect
// while it waits ends the wait the same way. It returns ctx's error when
// the notification does not come back in time.
func (l *AuthListener) Sync(ctx context.Context) error {
	nonce := newNonce()
	ch := make(chan struct{})
	l.mu.Lock()
	if !l.connected.Load() {
		l.mu.Unlock()
		return nil
	}
	l.waiters[nonce] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waiters, nonce)
		l.mu.Unlock()
	}()
	if err := pgdriver.Notify(ctx, l.db, AuthChannel, syncPrefix+nonce); err != nil {
		return Translate(err)
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *AuthListener) setConnected(on bool) {
	l.mu.Lock()
	if !on {
		l.cache.Distrust()
		for nonce, ch := range l.waiters { // nothing cached: the waits are over
			close(ch)
			delete(l.waiters, nonce)
		}
	}
	changed := l.connected.Swap(on) != on
	l.mu.Unlock()
	if changed && l.opts.OnState != nil {
		l.opts.OnState(on)
	}
}

func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
