package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// The targets of a read: the values of the span attribute db.fleet.target
// and of the target label of fleet.db.reads.
const (
	TargetPrimary = "primary"
	TargetReplica = "replica"
)

// AttrTarget is the span attribute that says where the reads of a request
// ran (TargetPrimary, TargetReplica), on the request's span and on every
// SQL span of a pool opened with Options.Target.
const AttrTarget = attribute.Key("db.fleet.target")

// Span attributes of a read routed by a Replicas set.
var (
	attrReplica = attribute.Key("db.fleet.replica")
	attrRetried = attribute.Key("db.fleet.retried")
)

// DefaultReplicaMaxLag and DefaultReplicaCheckInterval are the defaults of
// ReplicaOptions (FLEET_REPLICA_MAX_LAG, FLEET_REPLICA_CHECK_INTERVAL).
const (
	DefaultReplicaMaxLag        = 5 * time.Second
	DefaultReplicaCheckInterval = time.Second
)

// replicaCheckTimeout bounds one health check of one replica.
const replicaCheckTimeout = 2 * time.Second

// ReplicaOptions tune a Replicas set.
type ReplicaOptions struct {
	// MaxLag is the staleness beyond which a replica is skipped
	// (DefaultReplicaMaxLag when 0); Interval is the time between health
	// checks (DefaultReplicaCheckInterval when 0), and so the resolution
	// of the lag.
	MaxLag   time.Duration
	Interval time.Duration
	// MeterProvider receives fleet.db.reads, fleet.db.read_retries,
	// fleet.db.replica_lag and fleet.db.replica_usable; no-op when nil.
	MeterProvider metric.MeterProvider
	// Logger receives a line each time a replica becomes usable or is
	// skipped, with the reason; discarded when nil.
	Logger *slog.Logger
}

// Replicas is a set of PostgreSQL streaming replicas (hot standbys) of a
// Store's primary, to which Store sends the reads of the client API
// (Store.WithReplicas). A health checker (Run) measures each replica's lag
// against the primary every Interval; a replica that lags more than MaxLag,
// does not answer, or is not a standby is skipped until a check finds it
// usable again, and reads go to the usable replicas in turn, or to the
// primary when there is none.
//
// The lag is measured on WAL positions, not on replay timestamps: every
// check records the primary's pg_current_wal_lsn() with the time it was
// read, and a replica's lag is the time since the newest recorded position
// that its pg_last_wal_replay_lsn() has reached. The replica then holds
// every transaction the primary had committed at that time, so the lag is
// an upper bound of its staleness, at the resolution of Interval. Unlike
// now() - pg_last_xact_replay_timestamp(), it does not grow while the
// primary is idle; unlike comparing the standby's received and replayed
// positions, it grows while the standby is cut off from the primary.
type Replicas struct {
	primary  bun.IDB
	dbs      []*bun.DB
	maxLag   time.Duration
	interval time.Duration
	log      *slog.Logger
	state    []replicaState
	next     atomic.Uint64

	mu      sync.Mutex // guards history
	history []walSample

	reads   metric.Int64Counter
	retries metric.Int64Counter
	attrs   [2]metric.AddOption // target=primary, target=replica
	reg     metric.Registration
}

// replicaState is what the last check (or a failed read) found of one
// replica.
type replicaState struct {
	usable atomic.Bool
	// lag is the last measured lag in nanoseconds; -1 when unknown (the
	// replica did not answer, or is not a standby).
	lag atomic.Int64
}

// walSample is the primary's WAL position at a time.
type walSample struct {
	at  time.Time
	lsn int64
}

// NewReplicas returns the replica set of primary over the replica handles
// dbs (index i is the label replica="i"). Every replica starts skipped
// until the first check (Check, Run) finds it usable. It returns an error
// when the meter provider refuses an instrument.
func NewReplicas(primary bun.IDB, dbs []*bun.DB, opts ReplicaOptions) (*Replicas, error) {
	if opts.MaxLag <= 0 {
		opts.MaxLag = DefaultReplicaMaxLag
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultReplicaCheckInterval
	}
	if opts.MeterProvider == nil {
		opts.MeterProvider = noop.NewMeterProvider()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Replicas{primary: primary, dbs: dbs, maxLag: opts.MaxLag, interval: opts.Interval, log: opts.Logger,
		state: make([]replicaState, len(dbs))}
	for i := range r.state {
		r.state[i].lag.Store(-1)
	}
	if err := r.instruments(opts.MeterProvider); err != nil {
		return nil, err
	}
	return r, nil
}

// meterName names the storage package's meter.
const meterName = "github.com/fleetapi/fleetapi/storage"

func (r *Replicas) instruments(mp metric.MeterProvider) error {
	m := mp.Meter(meterName)
	var err error
	if r.reads, err = m.Int64Counter("fleet.db.reads",
		metric.WithDescription("Reads of the client API routed by the replica set, by target (primary, replica).")); err != nil {
		return err
	}
	if r.retries, err = m.Int64Counter("fleet.db.read_retries",
		metric.WithDescription("Reads that failed on a replica (connection lost, recovery conflict) and were run again on the primary.")); err != nil {
		return err
	}
	lag, err := m.Float64ObservableGauge("fleet.db.replica_lag", metric.WithUnit("s"),
		metric.WithDescription("Upper bound of each replica's staleness at the last health check; absent while it does not answer."))
	if err != nil {
		return err
	}
	usable, err := m.Int64ObservableGauge("fleet.db.replica_usable",
		metric.WithDescription("1 when the replica receives reads, 0 while it is skipped (lagging, failing, not a standby)."))
	if err != nil {
		return err
	}
	r.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range r.state {
			set := metric.WithAttributes(attribute.String("replica", strconv.Itoa(i)))
			var u int64
			if r.state[i].usable.Load() {
				u = 1
			}
			o.ObserveInt64(usable, u, set)
			if l := r.state[i].lag.Load(); l >= 0 {
				o.ObserveFloat64(lag, time.Duration(l).Seconds(), set)
			}
		}
		return nil
	}, lag, usable)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for i, t := range []string{TargetPrimary, TargetReplica} {
		r.attrs[i] = metric.WithAttributes(attribute.String("target", t))
		r.reads.Add(ctx, 0, r.attrs[i])
	}
	r.retries.Add(ctx, 0)
	return nil
}

// Len returns the number of replicas in the set.
func (r *Replicas) Len() int { return len(r.dbs) }

// Usable reports whether replica i receives reads now.
func (r *Replicas) Usable(i int) bool { return r.state[i].usable.Load() }

// Lag returns replica i's lag at the last check, and false when it is
// unknown (the replica did not answer or is not a standby).
func (r *Replicas) Lag(i int) (time.Duration, bool) {
	l := r.state[i].lag.Load()
	return time.Duration(l), l >= 0
}

// Run checks the replicas every Interval until ctx is done, then
// unregisters the set's gauges.
func (r *Replicas) Run(ctx context.Context) {
	defer func() { _ = r.reg.Unregister() }()
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		r.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check measures every replica once (in parallel, each within a bound of
// its own) and updates which of them receive reads. When the primary does
// not answer, the lags are not measured again (the last measures stand)
// and only whether each replica answers is updated.
func (r *Replicas) Check(ctx context.Context) {
	measured := r.samplePrimary(ctx)
	var wg sync.WaitGroup
	for i := range r.dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.checkOne(ctx, i, measured)
		}()
	}
	wg.Wait()
}

// samplePrimary records the primary's WAL position and forgets the
// positions too old to matter; it reports whether it could.
func (r *Replicas) samplePrimary(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, replicaCheckTimeout)
	defer cancel()
	var lsn int64
	if err := r.primary.NewRaw("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint").Scan(ctx, &lsn); err != nil {
		return false
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, walSample{at: now, lsn: lsn})
	// A replica behind every kept sample lags more than this horizon,
	// which is more than maxLag: older samples cannot change a verdict.
	horizon := now.Add(-(r.maxLag + 2*r.interval))
	drop := 0
	for drop < len(r.history)-1 && r.history[drop].at.Before(horizon) {
		drop++
	}
	r.history = append(r.history[:0], r.history[drop:]...)
	return true
}

// lagAt returns how stale a replica that has replayed up to replay is at
// now: the time since the newest sample it has reached, or, when it has
// reached none, the time since the oldest (a lower bound, beyond maxLag).
func (r *Replicas) lagAt(replay int64, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.history) == 0 {
		return 0
	}
	for j := len(r.history) - 1; j >= 0; j-- {
		if r.history[j].lsn <= replay {
			return max(0, now.Sub(r.history[j].at))
		}
	}
	return max(0, now.Sub(r.history[0].at))
}

// checkOne checks replica i: it answers, it is a standby, and (when the
// primary's position was measured) its lag is within maxLag.
func (r *Replicas) checkOne(ctx context.Context, i int, measured bool) {
	ctx, cancel := context.WithTimeout(ctx, replicaCheckTimeout)
	defer cancel()
	var standby bool
	var replay sql.NullInt64
	err := r.dbs[i].NewRaw("SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint").Scan(ctx, &standby, &replay)
	switch {
	case err != nil:
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return // shutting down: not the replica's fault
		}
		r.set(i, false, -1, fmt.Sprintf("unavailable: %v", Translate(err)))
	case !standby || !replay.Valid:
		r.set(i, false, -1, "not a standby (pg_is_in_recovery() is false): a promoted or wrongly configured server is never read from")
	case !measured:
		prev := time.Duration(r.state[i].lag.Load())
		r.set(i, prev >= 0 && prev <= r.maxLag, int64(prev), fmt.Sprintf("lag unknown (the primary did not answer); last measured %s", prev))
	default:
		lag := r.lagAt(replay.Int64, time.Now())
		r.set(i, lag <= r.maxLag, int64(lag), fmt.Sprintf("lagging %s behind the primary (max %s)", lag.Round(time.Millisecond), r.maxLag))
	}
}

// set records replica i's state and logs a change of usability.
func (r *Replicas) set(i int, usable bool, lag int64, reason string) {
	st := &r.state[i]
	st.lag.Store(lag)
	was := st.usable.Swap(usable)
	switch {
	case usable && !was:
		r.log.Info("read replica usable", slog.Int("replica", i), slog.Duration("lag", time.Duration(lag)))
	case !usable && was:
		r.log.Warn("read replica skipped, reads fall back", slog.Int("replica", i), slog.String("reason", reason))
	}
}

// pick returns the next usable replica in turn, or -1 when there is none.
func (r *Replicas) pick() int {
	n := len(r.dbs)
	start := int(r.next.Add(1) % uint64(n))
	for k := range n {
		if i := (start + k) % n; r.state[i].usable.Load() {
			return i
		}
	}
	return -1
}

// failed marks replica i skipped after a read on it failed for want of the
// database: the next check decides whether it is usable again.
func (r *Replicas) failed(i int, err error) {
	r.set(i, false, r.state[i].lag.Load(), fmt.Sprintf("a read failed: %v", err))
}

// read runs body on a usable replica, or on primary when there is none,
// and counts and marks on the request's span where it ran. A read that
// fails on the replica for want of the database (ErrUnavailable: the
// connection broke, the server is stopping, a recovery conflict cancelled
// the statement) is run once more on the primary, while the request still
// has time: reads are idempotent, so the caller sees an answer, not 503.
// When the request has a deadline, the replica gets half of the time left,
// so that a replica that hangs (frozen, a network partition) leaves the
// other half to the primary.
func (r *Replicas) read(ctx context.Context, primary *Store, body func(context.Context, *Store) error) error {
	span := trace.SpanFromContext(ctx)
	i := r.pick()
	if i < 0 {
		r.reads.Add(ctx, 1, r.attrs[0])
		span.SetAttributes(AttrTarget.String(TargetPrimary))
		return body(ctx, primary)
	}
	r.reads.Add(ctx, 1, r.attrs[1])
	span.SetAttributes(AttrTarget.String(TargetReplica), attrReplica.Int(i))
	rctx := ctx
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
		defer cancel()
	}
	err := body(rctx, primary.onReplica(r.dbs[i], i))
	if err == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
		return err
	}
	r.failed(i, err)
	r.retries.Add(ctx, 1)
	r.reads.Add(ctx, 1, r.attrs[0])
	span.SetAttributes(AttrTarget.String(TargetPrimary), attrRetried.Bool(true))
	return body(ctx, primary)
}

// fallback runs body on a usable replica after the primary failed it for
// want of the database (perr: no primary while a standby is promoted,
// docs/design.md §13), for a read that otherwise needs the primary
// (Store.readPrimaryFirst). It returns perr when no replica is usable. A
// usable replica is a standby within MaxLag at its last check (the lag
// measured before the primary went away stands while it is away), never
// a server that stopped being a standby.
func (r *Replicas) fallback(ctx context.Context, primary *Store, perr error, body func(context.Context, *Store) error) error {
	i := r.pick()
	if i < 0 {
		return perr
	}
	r.reads.Add(ctx, 1, r.attrs[1])
	trace.SpanFromContext(ctx).SetAttributes(AttrTarget.String(TargetReplica), attrReplica.Int(i), attrRetried.Bool(true))
	err := body(ctx, primary.onReplica(r.dbs[i], i))
	if err != nil && errors.Is(err, ErrUnavailable) && ctx.Err() == nil {
		r.failed(i, err)
	}
	return err
}
