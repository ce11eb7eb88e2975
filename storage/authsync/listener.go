package authsync

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

// Channel is the notification channel on which the triggers of
// migration 20261210000001 announce changes to what principals are made
// of: payload "token:<id>", "account:<id>" or "all".
const Channel = "fleet_auth"

// startPingEvery is how often a new listener connection sends its
// start-up ping again until one comes back.
const startPingEvery = 100 * time.Millisecond

// syncPrefix starts the payloads the listener sends itself: a sync
// barrier, a start-up check, a health ping.
const syncPrefix = "sync:"

// ackPrefix starts the payload a writer sends after a change it made
// (AwaitAcks): "ack:<seq>".
const ackPrefix = "ack:"

// The timing of the acknowledged invalidation (issue 19 item 6, reasoning
// in docs/decisions.md): a listener pings itself every
// DefaultHeartbeat; a ping that comes back proves that every change
// committed before it was sent has been applied, and extends the cache's
// trust to DefaultTrust after the moment it was sent; the ping's own
// statement renews the replica's lease to DefaultLease after that
// moment, as the database's clock counts it. DefaultLease is also the
// longest a writer waits for a replica that does not acknowledge
// (AwaitAcks); the difference with DefaultTrust is the margin for
// clocks that run at slightly different rates and for scheduling.
const (
	DefaultHeartbeat = 500 * time.Millisecond
	DefaultTrust     = 2 * time.Second
	DefaultLease     = 3 * time.Second
)

// ListenerOptions tune an Listener; zero values take defaults.
type ListenerOptions struct {
	// ApplicationName names the listener's connection in pg_stat_activity
	// ("fleetapi auth listener" when empty).
	ApplicationName string
	// PingInterval is how often the listener sends itself a ping, the
	// heartbeat that renews its lease and its cache's trust
	// (DefaultHeartbeat); PingTimeout how long a ping may take to come
	// back before the connection is taken as lost (2s). Together they
	// bound how long a connection that died without a word goes
	// unnoticed; the cache stops being consulted earlier, at Trust.
	PingInterval, PingTimeout time.Duration
	// Trust is how long after sending a ping that came back the cache is
	// consulted (DefaultTrust); Lease how long after it the replica's
	// lease runs (DefaultLease). Lease must exceed Trust; Trust is
	// lowered when it does not. Writers that cannot read the leases wait
	// DefaultLease (AwaitAcks): a longer Lease is for tests that
	// must not lose the cache's trust on a loaded machine, never for
	// serving.
	Trust, Lease time.Duration
	// OnNotification, when not nil, is called on the listener's goroutine
	// with each notification before it is applied (tests freeze the
	// listener in it).
	OnNotification func(payload string)
	// Dial, when not nil, dials the LISTEN session's connection instead of
	// the driver (tests delay what it sends).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts, doubling from the first to the second (100ms, 10s).
	MinBackoff, MaxBackoff time.Duration
	// Logger receives connection losses and recoveries (discard when nil).
	Logger *slog.Logger
	// OnState, when not nil, is called on the listener's goroutine each
	// time the cache becomes trusted (true) or distrusted (false).
	OnState func(connected bool)
}

func (o ListenerOptions) withDefaults() ListenerOptions {
	if o.ApplicationName == "" {
		o.ApplicationName = "fleetapi auth listener"
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultHeartbeat
	}
	if o.Trust <= 0 {
		o.Trust = DefaultTrust
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Lease <= o.Trust {
		o.Trust = max(o.Lease-time.Second, o.Lease/2)
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

// Listener keeps a tenancy.PrincipalCache consistent with the
// database: it LISTENs on Channel on a connection of its own and
// applies each notification to the cache. The cache is trusted only while
// the listener is known to receive every notification: from the moment a
// notification it sent itself after LISTEN came back (so LISTEN is in
// force; the cache is emptied then) until the connection fails or stays
// silent past a ping. Then the cache is distrusted (bypassed and emptied)
// and the listener reconnects with backoff.
//
// The trust is also bounded in time by itself (tenancy.PrincipalCache.TrustUntil):
// every ping that comes back extends it to Trust after the ping was sent,
// so a listener that stops receiving, for whatever reason (its goroutine
// frozen, its connection stalled, the process stopped), stops the cache
// being consulted within Trust of its last proof, with nobody acting.
// The replica also holds a lease in fleet_auth_replicas, renewed by the
// statement of each ping, and acknowledges there each change a writer
// announces ("ack:<seq>", AwaitAcks) once it has applied it: a writer
// waits for every live lease to acknowledge its change, or to end.
type Listener struct {
	// db sends the listener's own notifications (pings, Sync) and writes
	// its lease and acknowledgements; conf is the connection configuration
	// of each LISTEN session.
	db    *bun.DB
	conf  pgdriver.Config
	cache *tenancy.PrincipalCache
	opts  ListenerOptions
	// id is the replica's row in fleet_auth_replicas, new for each
	// listener.
	id string
	// applied is the highest change sequence the listener has received
	// (and so applied, with everything committed before it); it is read
	// and written on the listener's goroutine only.
	applied int64

	connected atomic.Bool
	mu        sync.Mutex
	waiters   map[string]chan struct{}
}

// NewListener returns a listener for cache on the database at dsn,
// which must be the primary itself: LISTEN does not work through a
// transaction pooler. Call Run to start it and Close when done.
func NewListener(dsn string, cache *tenancy.PrincipalCache, opts ListenerOptions) *Listener {
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
	return &Listener{
		db:      bun.NewDB(sqldb, pgdialect.New()),
		conf:    *connector.Config(),
		cache:   cache,
		opts:    opts,
		id:      newNonce(),
		waiters: map[string]chan struct{}{},
	}
}

// Close releases the listener's connections; call it after Run returned.
func (l *Listener) Close() error { return l.db.Close() }

// Connected reports whether the listener is connected and the cache
// synchronised (the cache is trusted, unless its trust has run out since
// the last ping came back).
func (l *Listener) Connected() bool { return l.connected.Load() }

// Run keeps the listener connected until ctx ends, then distrusts the
// cache and returns nil.
func (l *Listener) Run(ctx context.Context) error {
	backoff := l.opts.MinBackoff
	for {
		synced, err := l.session(ctx)
		l.setConnected(false, l.release)
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
func (l *Listener) session(ctx context.Context) (synced bool, err error) {
	// pgdriver's Listener reconnects by itself, inside the receive that met
	// the error, before returning it: the cache would stay trusted while it
	// dials and notifications are lost. Its connector here dials once; the
	// reconnection fails at once and the loss is seen at once.
	conf := l.conf
	dial := conf.Dialer
	if l.opts.Dial != nil {
		dial = l.opts.Dial
	}
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
	err = ln.Listen(lctx, Channel)
	cancel()
	if err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	// LISTEN is only written; it is in force once a notification sent
	// after it comes back. Until then the cache stays untrusted, and the
	// start-up ping is sent again every startPingEvery: one sent before the
	// server ran the LISTEN (a warm connection can beat a new one) is
	// never delivered. Once synchronised, a ping goes every PingInterval
	// whatever else arrives: each one that comes back extends the cache's
	// trust. pending holds the pings awaited with the time each was sent;
	// the oldest may not wait longer than PingTimeout.
	l.forgetOldReplicas(ctx)
	pending := map[string]time.Time{}
	var next time.Time // when the next ping is due
	for {
		now := time.Now()
		if !now.Before(next) {
			sent := time.Now()
			nonce, err := l.ping(ctx, synced)
			if err != nil {
				return synced, err
			}
			pending[nonce] = sent
			every := l.opts.PingInterval
			if !synced {
				every = min(every, startPingEvery)
			}
			next = sent.Add(every)
			now = time.Now()
		}
		wait := time.Until(next)
		for _, sent := range pending {
			left := sent.Add(l.opts.PingTimeout).Sub(now)
			if left <= 0 {
				return synced, errors.New("auth cache listener: ping timed out")
			}
			wait = min(wait, left)
		}
		_, payload, err := ln.ReceiveTimeout(ctx, max(wait, time.Millisecond))
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return synced, fmt.Errorf("receive: %w", err)
			}
			continue
		}
		if l.opts.OnNotification != nil {
			l.opts.OnNotification(payload)
		}
		if nonce, ok := strings.CutPrefix(payload, syncPrefix); ok {
			if sent, ok := pending[nonce]; ok {
				// Every notification committed before this ping has been
				// applied; so have the pings sent before it.
				for n, at := range pending {
					if !at.After(sent) {
						delete(pending, n)
					}
				}
				l.cache.TrustUntil(sent.Add(l.opts.Trust))
				if !synced {
					synced = true
					l.setConnected(true, nil)
					l.opts.Logger.Info("auth cache listener connected")
				}
			}
		}
		if err := l.apply(ctx, payload); err != nil {
			return synced, err
		}
	}
}

// pingSQL renews the replica's lease and sends it a sync notification, in
// one statement and so one transaction: the lease is durable before the
// ping can come back and extend the cache's trust. A listener that is not
// synchronised acknowledges every change sequence taken so far: its cache
// is untrusted, and whatever it loads once trusted was committed before
// this statement (which the ping that makes it trusted follows in commit
// order) or is announced to it after.
const pingSQL = `WITH lease AS (
	INSERT INTO fleet_auth_replicas AS r (id, name, lease_until, acked_seq)
	VALUES (?, ?, now() + ? * interval '1 microsecond', ?)
	ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until,
		acked_seq = GREATEST(r.acked_seq, EXCLUDED.acked_seq)
	RETURNING 1)
SELECT pg_notify(?, ?) FROM lease`

// unsyncedAck is the acknowledgement of a listener that is not
// synchronised: every sequence number handed out so far.
const unsyncedAck = `(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM fleet_auth_seq)`

// ping renews the lease and sends a sync notification to the listener
// itself; it returns its nonce.
func (l *Listener) ping(ctx context.Context, synced bool) (string, error) {
	nonce := newNonce()
	pctx, cancel := context.WithTimeout(ctx, l.opts.PingTimeout)
	defer cancel()
	var acked any = l.applied
	if !synced {
		acked = bun.Safe(unsyncedAck)
	}
	if _, err := l.db.NewRaw(pingSQL, l.id, l.opts.ApplicationName, l.opts.Lease.Microseconds(), acked,
		Channel, syncPrefix+nonce).Exec(pctx); err != nil {
		return "", fmt.Errorf("ping: %w", err)
	}
	return nonce, nil
}

// ack records that the listener has applied every change up to seq.
func (l *Listener) ack(ctx context.Context, seq int64) error {
	if seq <= l.applied {
		return nil
	}
	l.applied = seq
	actx, cancel := context.WithTimeout(ctx, l.opts.PingTimeout)
	defer cancel()
	if _, err := l.db.NewRaw("UPDATE fleet_auth_replicas SET acked_seq = GREATEST(acked_seq, ?) WHERE id = ?",
		seq, l.id).Exec(actx); err != nil {
		return fmt.Errorf("acknowledge: %w", err)
	}
	return nil
}

// forgetOldReplicas deletes the rows of replicas whose lease ended a day
// ago (stopped or crashed processes); with best effort.
func (l *Listener) forgetOldReplicas(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.PingTimeout)
	defer cancel()
	_, _ = l.db.NewRaw("DELETE FROM fleet_auth_replicas WHERE lease_until < now() - interval '1 day'").Exec(ctx)
}

// release ends the replica's lease after its cache was distrusted, so
// that writers do not wait for it; with best effort (the database may be
// what failed: then the lease runs out by itself).
func (l *Listener) release() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = l.db.NewRaw("UPDATE fleet_auth_replicas SET lease_until = LEAST(lease_until, now()) WHERE id = ?", l.id).Exec(ctx)
}

// apply applies one notification to the cache. An unknown payload clears
// it: whatever changed, nothing stale stays. An acknowledgement that
// cannot be written ends the session.
func (l *Listener) apply(ctx context.Context, payload string) error {
	kind, arg, _ := strings.Cut(payload, ":")
	switch kind {
	case "sync":
		l.mu.Lock()
		if ch, ok := l.waiters[arg]; ok {
			close(ch)
			delete(l.waiters, arg)
		}
		l.mu.Unlock()
		return nil
	case "ack":
		seq, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			break
		}
		return l.ack(ctx, seq)
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
		return nil
	case "all":
		l.cache.Clear()
		return nil
	}
	l.opts.Logger.Warn("auth cache listener: unknown notification; cache cleared", slog.String("payload", payload))
	l.cache.Clear()
	return nil
}

// Sync returns once the cache serves nothing older than the changes
// committed before the call: it sends a notification through the database
// and waits for the listener to receive it (PostgreSQL delivers the
// notifications of committed transactions in commit order, so every change
// before it has been applied by then). While the listener is disconnected
// the cache is bypassed and empty, and Sync returns at once; a disconnect
// while it waits ends the wait the same way. It returns ctx's error when
// the notification does not come back in time.
func (l *Listener) Sync(ctx context.Context) error {
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
	if err := pgdriver.Notify(ctx, l.db, Channel, syncPrefix+nonce); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setConnected records the listener's state; then runs, when not nil,
// before the OnState hook is told.
func (l *Listener) setConnected(on bool, then func()) {
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
	if then != nil {
		then()
	}
	if changed && l.opts.OnState != nil {
		l.opts.OnState(on)
	}
}

func newNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
