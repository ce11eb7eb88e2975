// Package clock runs the clock's rules (docs/design.md §14): what fires
// without a reading, connection_no when a device falls silent and the
// notify_service_expire service records the day moves into "soon" or
// "expired". Every replica runs the loop; only the holder of the lease
// storage.ClockLease sweeps, every interval, so the work is done by one
// replica at a time and taken over by another within the lease's ttl
// when its holder dies. The lease is an economy, not the guarantee:
// storage's sweeps notify each silence and each state entered once even
// when two replicas sweep at once.
package clock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// DefaultInterval is FLEET_CLOCK_INTERVAL's default: the time between two
// sweeps, and so how late a connection_no may fire.
const DefaultInterval = 15 * time.Second

// Store is what the loop needs of storage.Store.
type Store interface {
	TryLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
	SweepSilence(ctx context.Context, now time.Time) (storage.ClockSweep, error)
	SweepServiceDays(ctx context.Context, now time.Time) (storage.ClockSweep, error)
}

// Options configure Run; zero values take the defaults.
type Options struct {
	Store Store
	// Holder names this replica in the lease (NewHolder when empty).
	Holder string
	// Interval is the time between two sweeps (DefaultInterval when 0).
	Interval time.Duration
	// TTL is how long a lease taken or renewed lasts: how long a dead
	// holder's work waits before another replica takes it over (three
	// intervals when 0).
	TTL time.Duration
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
	// Usage, when not nil, receives the notifications each sweep created
	// per account, on now's UTC day: usage metering's "notifications"
	// (docs/design.md §14, "Around it").
	Usage func(day time.Time, created map[int64]int64)
	// Swept, when not nil, is called after each sweep this replica ran.
	Swept func(Sweep)
}

// Sweep is what one sweep of the loop did.
type Sweep struct {
	Holder string
	Now    time.Time
	// Silence is the connection_no sweep's outcome; Services the one of
	// the services due by the day, which runs on the first sweep of each
	// UTC day a holder runs (ServicesRun).
	Silence, Services storage.ClockSweep
	ServicesRun       bool
}

// NewHolder returns a name for this process in a lease: its host, its
// process id and random bytes (two processes never share one).
func NewHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Run sweeps every interval while it holds the lease, until ctx ends; it
// then releases the lease (so another replica takes over at its next
// tick, not after the ttl) and returns.
func Run(ctx context.Context, o Options) {
	if o.Holder == "" {
		o.Holder = NewHolder()
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.TTL <= 0 {
		o.TTL = 3 * o.Interval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	l := loop{Options: o}
	for {
		l.once(ctx)
		select {
		case <-ctx.Done():
			l.release(ctx)
			return
		case <-tick.C:
		}
	}
}

// loop is Run's state between ticks.
type loop struct {
	Options
	// held: the lease was held at the last tick.
	held bool
	// servicesDay is the UTC day whose services sweep this holder ran
	// ("" after the lease was lost: a holder taking over runs it at once).
	servicesDay string
}

// once takes or renews the lease and, held, sweeps.
func (l *loop) once(ctx context.Context) {
	held, err := l.Store.TryLease(ctx, storage.ClockLease, l.Holder, l.TTL)
	if err != nil {
		if ctx.Err() == nil {
			l.Logger.Warn("clock: the lease could not be asked for; next at the next interval", slog.Any("error", err))
		}
		held = false
	}
	if held != l.held {
		l.Logger.Info("clock: lease", slog.Bool("held", held), slog.String("holder", l.Holder))
	}
	l.held = held
	if !held {
		l.servicesDay = ""
		return
	}
	now := l.Now()
	sw := Sweep{Holder: l.Holder, Now: now}
	if sw.Silence, err = l.Store.SweepSilence(ctx, now); err != nil && ctx.Err() == nil {
		l.Logger.Warn("clock: connection_no sweep failed; next at the next interval", slog.Any("error", err))
	}
	if day := now.UTC().Format(time.DateOnly); day != l.servicesDay {
		sw.ServicesRun = true
		sw.Services, err = l.Store.SweepServiceDays(ctx, now)
		switch {
		case err == nil:
			l.servicesDay = day
		case ctx.Err() == nil:
			l.Logger.Warn("clock: services sweep failed; again at the next interval", slog.Any("error", err))
		}
	}
	if n := sw.Silence.Created() + sw.Services.Created(); n > 0 {
		l.Logger.Info("clock: notifications created", slog.Int64("notifications", n))
	}
	if l.Usage != nil {
		for _, created := range []map[int64]int64{sw.Silence.Notifications, sw.Services.Notifications} {
			if len(created) > 0 {
				l.Usage(now.UTC(), created)
			}
		}
	}
	if l.Swept != nil {
		l.Swept(sw)
	}
}

// release gives the lease up, on a context of its own (ctx has ended),
// bounded to a few seconds. It is asked whether or not the last tick held
// it (a renewal cut short by the stop itself may have committed): a lease
// of another holder is left alone.
func (l *loop) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.Store.ReleaseLease(rctx, storage.ClockLease, l.Holder); err != nil {
		l.Logger.Warn("clock: the lease could not be released; another replica takes it when it expires", slog.Any("error", err))
	}
}
