// Package metering counts what the API serves each account (docs/design.md §12,
// usage metering): per account, UTC day and route, the requests, the rows
// of the lists, the writes, the 4xx and 5xx answers and the bytes sent. It
// counts in memory, without a database write per request, and adds its
// counts to PostgreSQL (storage.Store.AddUsage, an additive upsert, so that
// replicas add up) on an interval and when the server stops.
//
// Memory is bounded: at most MaxEntries (account, day, route) keys are
// counted between two flushes. When a request needs one more key, the full
// map is handed to the flusher at once and counting goes on in a new one;
// if the flusher has not taken the previous full map yet (the database is
// slow or down), the request's usage is dropped and counted in
// fleet_usage_dropped_total. So a replica holds at most two full maps and
// the batch it is writing.
//
// What a crash loses: the counts since the replica's last successful
// flush, at most one interval of its requests (plus what a failing
// database kept it from writing). A graceful stop flushes first.
package metering

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/fleetapi/fleetapi/storage"
)

// Defaults of Options.
const (
	DefaultInterval   = 10 * time.Second
	DefaultMaxEntries = 100_000
)

// Name names the tracer and the meter of the package.
const Name = "github.com/fleetapi/fleetapi/api/metering"

// Sink stores counts (storage.Store.AddUsage): all of a batch or none of
// it.
type Sink interface {
	AddUsage(ctx context.Context, counts []storage.UsageCount) error
}

// Options configure a Meter; zero values take the defaults.
type Options struct {
	// Interval is the time between two flushes (DefaultInterval when 0).
	Interval time.Duration
	// MaxEntries bounds the (account, day, route) keys counted between two
	// flushes (DefaultMaxEntries when 0).
	MaxEntries     int
	Logger         *slog.Logger
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
}

// Request is one answered request of an authenticated account.
type Request struct {
	AccountID int64
	// Ancestors are the accounts above AccountID, nearest first, and
	// BilledAccountID the account billed for its usage
	// (storage.UsageCount): recorded with the counts, so that the usage
	// outlives an erase of the account.
	Ancestors       []int64
	BilledAccountID int64
	// Method is the request's method.
	Method string
	// At is when it was answered; its UTC day counts.
	At time.Time
	// Route is the method and route template, "GET /services/{id}".
	Route  string
	Status int
	// Rows is the number of items of a list answer (0 otherwise).
	Rows int
	// BytesOut is the size of the response body.
	BytesOut int64
	// Readings and Notifications are what a POST /readings stored and
	// fired (docs/design.md §14).
	Readings, Notifications int64
}

type key struct {
	account int64
	day     int64 // days since 1970-01-01, UTC
	route   string
}

type counts struct {
	requests, rows, writes, e4xx, e5xx, bytes int64
	readings, notifications                   int64
	// ancestors and billed are the account's (accounts do not move: the
	// first request's stand for the key's).
	ancestors []int64
	billed    int64
}

// Meter counts requests in memory and flushes them to its Sink. It is safe
// for concurrent use.
type Meter struct {
	sink     Sink
	interval time.Duration
	max      int
	log      *slog.Logger
	tracer   trace.Tracer

	mu sync.Mutex
	// cur counts the requests since the last flush; full, when not nil, is
	// a map that reached max, waiting for the flusher.
	cur, full map[key]*counts
	kick      chan struct{}

	// flushing serialises flushes (the interval's, a kick's, the last).
	flushing sync.Mutex

	flushes metric.Int64Counter
	dropped metric.Int64Counter
	written metric.Int64Counter
}

// New returns a Meter that flushes to sink.
func New(sink Sink, o Options) (*Meter, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MeterProvider == nil {
		o.MeterProvider = metricnoop.NewMeterProvider()
	}
	if o.TracerProvider == nil {
		o.TracerProvider = tracenoop.NewTracerProvider()
	}
	m := &Meter{sink: sink, interval: o.Interval, max: o.MaxEntries, log: o.Logger, tracer: o.TracerProvider.Tracer(Name),
		cur: map[key]*counts{}, kick: make(chan struct{}, 1)}
	if err := m.instruments(o.MeterProvider.Meter(Name)); err != nil {
		return nil, err
	}
	return m, nil
}

// instruments creates the Meter's counters on mm, the series that alerts
// watch (each flush result, the dropped requests) at zero from the start.
func (m *Meter) instruments(mm metric.Meter) error {
	for _, c := range []struct {
		counter           *metric.Int64Counter
		name, description string
	}{
		{&m.flushes, "fleet.usage.flushes", "Usage flushes to the database, by result (ok, error)."},
		{&m.dropped, "fleet.usage.dropped", "Requests whose usage was not counted: the in-memory bound was reached while the database was behind."},
		{&m.written, "fleet.usage.rows", "Usage rows (account, day, route) added to the database by flushes."},
	} {
		var err error
		if *c.counter, err = mm.Int64Counter(c.name, metric.WithDescription(c.description)); err != nil {
			return err
		}
	}
	ctx := context.Background()
	for _, r := range []string{"ok", "error"} {
		m.flushes.Add(ctx, 0, metric.WithAttributes(attribute.String("result", r)))
	}
	m.dropped.Add(ctx, 0)
	return nil
}

// Interval is the time between two flushes.
func (m *Meter) Interval() time.Duration { return m.interval }

// Record counts one answered request. A write is a request of another
// method than GET or HEAD answered 2xx.
func (m *Meter) Record(r Request) {
	c := counts{requests: 1, rows: int64(r.Rows), bytes: r.BytesOut, ancestors: r.Ancestors, billed: r.BilledAccountID,
		readings: r.Readings, notifications: r.Notifications}
	switch {
	case r.Status >= 500:
		c.e5xx = 1
	case r.Status >= 400:
		c.e4xx = 1
	case r.Status >= 200 && r.Status < 300 && r.Method != "GET" && r.Method != "HEAD":
		c.writes = 1
	}
	day := r.At.Unix()
	if day < 0 {
		day -= 86399
	}
	m.mu.Lock()
	ok := m.add(key{account: r.AccountID, day: day / 86400, route: r.Route}, c)
	m.mu.Unlock()
	if !ok {
		m.dropped.Add(context.Background(), 1)
	}
}

// add adds c under k, with m.mu held; false when the
// bound dropped it.
func (m *Meter) add(k key, c counts) bool {
	if v, ok := m.cur[k]; ok {
		v.add(c)
		return true
	}
	if len(m.cur) >= m.max {
		if m.full != nil {
			return false
		}
		m.full, m.cur = m.cur, make(map[key]*counts, len(m.cur))
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	v := c
	m.cur[k] = &v
	return true
}

func (c *counts) add(o counts) {
	c.requests += o.requests
	c.rows += o.rows
	c.writes += o.writes
	c.e4xx += o.e4xx
	c.e5xx += o.e5xx
	c.bytes += o.bytes
	c.readings += o.readings
	c.notifications += o.notifications
}

// Run flushes every interval, and at once when the in-memory bound is
// reached, until ctx ends; a failed flush keeps its counts for the next
// one. It does not flush at the end: the server calls Flush after its last
// request (graceful shutdown).
func (m *Meter) Run(ctx context.Context) {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for m.due(ctx, t.C) {
		fctx, cancel := context.WithTimeout(ctx, m.interval+5*time.Second)
		if err := m.Flush(fctx); err != nil && !errors.Is(err, context.Canceled) {
			m.log.WarnContext(ctx, "usage flush failed; the counts are kept for the next flush", slog.Any("error", err))
		}
		cancel()
	}
}

// due waits for the next flush, the tick or a kick (the in-memory bound
// reached): false when ctx ends first.
func (m *Meter) due(ctx context.Context, tick <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-tick:
	case <-m.kick:
	}
	return true
}

// Flush adds what was counted since the last flush to the Sink. On an
// error the counts are kept (as far as the bound allows) for the next
// flush, and the error is returned.
func (m *Meter) Flush(ctx context.Context) error {
	m.flushing.Lock()
	defer m.flushing.Unlock()
	m.mu.Lock()
	batch, full := m.cur, m.full
	m.cur, m.full = make(map[key]*counts, len(batch)), nil
	m.mu.Unlock()
	for k, c := range full {
		if v, ok := batch[k]; ok {
			v.add(*c)
		} else {
			batch[k] = c
		}
	}
	if len(batch) == 0 {
		return nil
	}
	ctx, span := m.tracer.Start(ctx, "usage.flush")
	defer span.End()
	rows := make([]storage.UsageCount, 0, len(batch))
	for k, c := range batch {
		rows = append(rows, storage.UsageCount{AccountID: k.account, Ancestors: c.ancestors, BilledAccountID: c.billed,
			Day: time.Unix(k.day*86400, 0).UTC(), Route: k.route,
			Requests: c.requests, RowsReturned: c.rows, Writes: c.writes, Errors4xx: c.e4xx, Errors5xx: c.e5xx, BytesOut: c.bytes,
			ReadingsAccepted: c.readings, NotificationsCreated: c.notifications})
	}
	span.SetAttributes(attribute.Int("fleet.usage.rows", len(rows)))
	err := m.sink.AddUsage(ctx, rows)
	if err != nil {
		span.RecordError(err)
		m.flushes.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "error")))
		m.mu.Lock()
		var lost int64
		for k, c := range batch {
			if !m.add(k, *c) {
				lost += c.requests
			}
		}
		m.mu.Unlock()
		if lost > 0 {
			m.dropped.Add(ctx, lost)
		}
		return err
	}
	m.flushes.Add(ctx, 1, metric.WithAttributes(attribute.String("result", "ok")))
	m.written.Add(ctx, int64(len(rows)))
	return nil
}

// Pending is the number of (account, day, route) keys counted and not yet
// flushed.
func (m *Meter) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.full)
}
