package metering_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api/metering"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(storagetest.Main(m)) }

// world is a database with the demo data and its store.
func world(t *testing.T) (*storagetest.DB, *storage.Store, int64) {
	t.Helper()
	db := storagetest.New(t)
	if _, err := importfile.Load(context.Background(), db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(db.DB)
	acme, err := store.AccountByUsername(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return db, store, acme.ID
}

// stored is the sum of requests in usage_daily.
func stored(t *testing.T, db *storagetest.DB) int64 {
	t.Helper()
	var n int64
	if err := db.NewRaw("SELECT coalesce(sum(requests), 0) FROM usage_daily").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

var noon = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func req(account int64, route string, at time.Time) metering.Request {
	return metering.Request{AccountID: account, Method: "GET", At: at, Route: route, Status: 200, BytesOut: 10}
}

// TestMeterBound: at most MaxEntries keys are counted between flushes; the
// key after that hands the full map to the flusher and starts a new one; a
// new key while a full map still waits is dropped (and only that one).
// Known keys always count.
func TestMeterBound(t *testing.T) {
	db, store, acme := world(t)
	m, err := metering.New(store, metering.Options{MaxEntries: 2, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // keys 0..4; key 4 finds a full map waiting
		m.Record(req(acme, fmt.Sprintf("GET /r%d", i), noon))
	}
	m.Record(req(acme, "GET /r0", noon)) // in the waiting full map, new to the current one (full): dropped too
	m.Record(req(acme, "GET /r2", noon)) // known in the current map: counted
	if got := m.Pending(); got != 4 {
		t.Fatalf("pending %d, want 4 (two full, two current)", got)
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Route    string `bun:"route"`
		Requests int64  `bun:"requests"`
	}
	if err := db.NewRaw("SELECT route, requests FROM usage_daily ORDER BY route").Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows); got != "[{GET /r0 1} {GET /r1 1} {GET /r2 2} {GET /r3 1}]" {
		t.Errorf("stored %s", got)
	}
	if m.Pending() != 0 {
		t.Errorf("pending after flush: %d", m.Pending())
	}
}

// TestMeterKeepsCountsOnFailure: a flush that fails (the database cannot
// be reached) keeps its counts for the next one.
func TestMeterKeepsCountsOnFailure(t *testing.T) {
	_, _, acme := world(t)
	down := storage.Open("postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=1", storage.Options{MaxOpenConns: 1})
	defer down.Close()
	m, err := metering.New(storage.NewStore(down), metering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Record(req(acme, "GET /me", noon))
	m.Record(req(acme, "GET /services", noon))
	m.Record(req(acme, "GET /services", noon.Add(24*time.Hour)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Flush(ctx); err == nil {
		t.Fatal("flush to an unreachable database succeeded")
	}
	if got := m.Pending(); got != 3 {
		t.Fatalf("pending after a failed flush: %d, want 3", got)
	}
}

// TestMeterRunFlushesWhenFull: Run flushes at once when the bound is
// reached, without waiting for its interval (an hour here).
func TestMeterRunFlushesWhenFull(t *testing.T) {
	db, store, acme := world(t)
	m, err := metering.New(store, metering.Options{MaxEntries: 3, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i := range 4 {
		m.Record(req(acme, fmt.Sprintf("GET /r%d", i), noon))
	}
	deadline := time.Now().Add(30 * time.Second)
	for stored(t, db) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the full map was not flushed: %d stored", stored(t, db))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The kicked flush took the full map and whatever the current one held.
	if n := stored(t, db) + int64(m.Pending()); n != 4 {
		t.Errorf("stored and pending: %d, want 4", n)
	}
}

// TestMeterDays: a request counts on its UTC day, whatever the clock's
// zone, and an erased account's counts are skipped by the flush.
func TestMeterDays(t *testing.T) {
	db, store, acme := world(t)
	m, err := metering.New(store, metering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	east := time.FixedZone("east", 10*3600)
	m.Record(req(acme, "GET /me", time.Date(2026, 5, 2, 8, 0, 0, 0, east)))        // 2026-05-01 22:00 UTC
	m.Record(req(acme, "GET /me", time.Date(2026, 5, 1, 23, 59, 59, 0, time.UTC))) // same day
	m.Record(req(acme, "GET /me", time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)))    // next day
	m.Record(req(acme, "GET /me", time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC))) // before the epoch
	m.Record(req(987654321, "GET /me", noon))                                      // an account erased since: kept
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Day      string `bun:"day"`
		Requests int64  `bun:"requests"`
	}
	if err := db.NewRaw("SELECT to_char(day, 'YYYY-MM-DD') AS day, requests FROM usage_daily ORDER BY day, account_id").Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows); got != "[{1969-12-31 1} {2026-05-01 2} {2026-05-01 1} {2026-05-02 1}]" {
		t.Errorf("days %s", got)
	}
}

// BenchmarkMeterRecord: the meter's part of a request's cost (one map
// update under the mutex, the key known), serial and from every core at
// once (docs/performance.md).
func BenchmarkMeterRecord(b *testing.B) {
	m, err := metering.New(storage.NewStore(nil), metering.Options{Interval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	r := req(7, "GET /events/{id}", noon)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Record(r)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Record(r)
			}
		})
	})
}
