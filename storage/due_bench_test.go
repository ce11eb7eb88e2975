package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
)

// The due benchmarks run on a generated data set (docs/performance.md,
// "The due list"), named by FLEET_BENCH_DATABASE_URL:
//
//	fleetapi generate --preset large --today 2026-11-22 --database-url "$FLEET_BENCH_DATABASE_URL"
//
// Without it they skip: there is no data set of that size in a test
// database.
func benchDatabase(b *testing.B) (*storage.Store, *bun.DB) {
	b.Helper()
	url := os.Getenv("FLEET_BENCH_DATABASE_URL")
	if url == "" {
		b.Skip("FLEET_BENCH_DATABASE_URL names no generated data set")
	}
	db := storage.Open(url, storage.Options{MaxOpenConns: 4})
	b.Cleanup(func() { db.Close() })
	return storage.NewStore(db), db
}

// benchDueToday is the reference day of the generated data set.
var benchDueToday = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// BenchmarkDueServices: GET /services/due's storage call (at most 500
// records) for the harness principals of the large preset: the admin, the
// largest manager (222,300 services in its tree), a middle and the
// smallest manager, a user and a subaccount.
func BenchmarkDueServices(b *testing.B) {
	s, _ := benchDatabase(b)
	e := newEngine(b)
	for _, who := range []string{"gen-admin", "gen-manager-001", "gen-manager-010", "gen-manager-050", "gen-user-00007", "gen-sub-00001"} {
		b.Run(who, func(b *testing.B) {
			scope := scopeOf(b, e, s, who, storage.Services.Resource())
			ctx := context.Background()
			rows := 0
			for b.Loop() {
				got, err := s.DueServices(ctx, scope, benchDueToday, 500)
				if err != nil {
					b.Fatal(err)
				}
				rows = len(got)
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

// BenchmarkReadingUpdate: the hot write of a fleet, one device's odometer
// and engine hours going up (1–50 km, 0–1 h) on random devices of the data
// set, one statement each: committed one by one (commit), or all in one
// transaction committed at the end (in_tx: the statement and its triggers
// without the commit's flush). Run with -benchtime 1000x for 1,000
// updates; updates/s is the reported rate.
func BenchmarkReadingUpdate(b *testing.B) {
	_, db := benchDatabase(b)
	ctx := context.Background()
	var imeis []string
	if err := db.NewRaw(`SELECT imei FROM objects ORDER BY id`).Scan(ctx, &imeis); err != nil {
		b.Fatal(err)
	}
	const update = `UPDATE objects SET odometer = odometer + ?, engine_hours = engine_hours + ? WHERE imei = ?`
	benchUpdates(b, db, update, 1, func(r *rand.Rand) []any {
		return []any{1 + r.IntN(50), r.IntN(2), imeis[r.IntN(len(imeis))]}
	})
}

// benchUpdates runs the statement query with the arguments args draws, as
// two sub-benchmarks reporting updates/s: committed one by one (commit),
// and all in one transaction committed at the end (in_tx: the statement
// and its triggers without the commit's flush). seed makes the draws
// repeatable (each sub-benchmark draws from its own source).
func benchUpdates(b *testing.B, db *bun.DB, query string, seed uint64, args func(*rand.Rand) []any) {
	ctx := context.Background()
	b.Run("commit", func(b *testing.B) {
		r := rand.New(rand.NewPCG(seed, seed+1))
		start := time.Now()
		for b.Loop() {
			if _, err := db.ExecContext(ctx, query, args(r)...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "updates/s")
	})
	b.Run("in_tx", func(b *testing.B) {
		r := rand.New(rand.NewPCG(seed+4, seed+5))
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck // a no-op after Commit
		start := time.Now()
		for b.Loop() {
			if _, err := tx.ExecContext(ctx, query, args(r)...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "updates/s")
	})
}

// BenchmarkServiceInsert: one service created on a random device, one
// statement and commit each; the rows are deleted afterwards.
func BenchmarkServiceInsert(b *testing.B) {
	_, db := benchDatabase(b)
	ctx := context.Background()
	var imeis []string
	if err := db.NewRaw(`SELECT imei FROM objects ORDER BY id`).Scan(ctx, &imeis); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := db.ExecContext(ctx, `DELETE FROM services WHERE name LIKE 'bench insert %'`); err != nil {
			b.Error(err)
		}
	})
	r := rand.New(rand.NewPCG(3, 4))
	start := time.Now()
	i := 0
	for b.Loop() {
		i++
		if _, err := db.ExecContext(ctx, `INSERT INTO services (account_id, imei, name, odo, odo_interval, odo_last, days, days_interval, days_last)
			SELECT account_id, imei, ?, true, 10000, greatest(odometer - 9000, 0), true, 365, DATE '2026-01-01' FROM objects WHERE imei = ?`,
			fmt.Sprintf("bench insert %d %d", time.Now().UnixNano(), i), imeis[r.IntN(len(imeis))]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "inserts/s")
}
