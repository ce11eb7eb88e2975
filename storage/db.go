// Package storage is fleetapi's PostgreSQL layer: opening the database,
// migrating it, the bun models and queries for tenant data, and the
// translation of policy row scopes into SQL. Request-path queries on
// tenant data always take the policy's row scope. The trusted jobs that
// are not request-path queries live in sub-packages that the request path
// never uses: importfile and demodata (loading a data file, the demo data
// and its guards) and synth (synthetic data) read and write whole tables
// without a scope; pgserver finds or starts PostgreSQL.
package storage

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/extra/bunotel"
	"github.com/uptrace/bun/migrate"
	"github.com/uptrace/opentelemetry-go-extra/otelsql"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/migrations"
)

// DefaultURL is the database used when FLEET_DATABASE_URL is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/fleetapi?sslmode=disable"

// Options tune the connection pool and the telemetry of a database handle.
type Options struct {
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	// DialTimeout bounds connecting; ReadTimeout and WriteTimeout bound
	// each network round trip, so that an unreachable database fails fast.
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// TracerProvider and MeterProvider receive the SQL spans and pool
	// metrics; the global providers when nil.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Target, when set, is the db.fleet.target attribute (AttrTarget) of
	// the pool's SQL spans and the target label of its pool metrics:
	// TargetPrimary, or TargetReplica for a read replica's pool.
	Target string
}

func (o Options) withDefaults() Options {
	if o.MaxOpenConns == 0 {
		o.MaxOpenConns = 16
	}
	if o.MaxIdleConns == 0 {
		o.MaxIdleConns = o.MaxOpenConns
	}
	if o.ConnMaxLifetime == 0 {
		o.ConnMaxLifetime = 30 * time.Minute
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 10 * time.Second
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 10 * time.Second
	}
	return o
}

// Open returns a bun handle on the PostgreSQL database at dsn, with the
// pgdialect, pool settings and the bunotel hook for SQL spans. It does not
// connect; call Ping or EnsureDatabase for that.
func Open(dsn string, opts Options) *bun.DB {
	opts = opts.withDefaults()
	epoch := &poolEpoch{}
	connector := pgdriver.NewConnector(
		pgdriver.WithDSN(dsn),
		pgdriver.WithDialTimeout(opts.DialTimeout),
		pgdriver.WithReadTimeout(opts.ReadTimeout),
		pgdriver.WithWriteTimeout(opts.WriteTimeout),
		pgdriver.WithResetSessionFunc(epoch.discardDeadConn),
		epoch.dialer(),
	)
	sqldb := sql.OpenDB(connector)
	sqldb.SetMaxOpenConns(opts.MaxOpenConns)
	sqldb.SetMaxIdleConns(opts.MaxIdleConns)
	sqldb.SetConnMaxLifetime(opts.ConnMaxLifetime)
	db := bun.NewDB(sqldb, pgdialect.New(), bun.WithDiscardUnknownColumns())
	// Statements go to spans unformatted (with their ? placeholders): the
	// values are tenant data, personal data and token hashes.
	hookOpts := []bunotel.Option{bunotel.WithDBName(databaseName(dsn)), bunotel.WithFormattedQueries(false)}
	poolAttrs := []attribute.KeyValue{attribute.String("db.name", databaseName(dsn))}
	if opts.Target != "" {
		hookOpts = append(hookOpts, bunotel.WithAttributes(AttrTarget.String(opts.Target)))
		poolAttrs = append(poolAttrs, attribute.String("target", opts.Target))
	}
	if opts.TracerProvider != nil {
		hookOpts = append(hookOpts, bunotel.WithTracerProvider(opts.TracerProvider))
	}
	if opts.MeterProvider != nil {
		hookOpts = append(hookOpts, bunotel.WithMeterProvider(opts.MeterProvider))
		// Pool usage: open, in-use and idle connections, waits.
		otelsql.ReportDBStatsMetrics(sqldb, otelsql.WithMeterProvider(opts.MeterProvider),
			otelsql.WithAttributes(poolAttrs...))
	}
	return db.WithQueryHook(epoch).WithQueryHook(operationHook{bunotel.NewQueryHook(hookOpts...)})
}

// EnsureDatabase creates the database named in dsn when it does not exist,
// connecting to the server's "postgres" database to do so.
func EnsureDatabase(ctx context.Context, dsn string) error {
	name := databaseName(dsn)
	if name == "" || name == "postgres" {
		return nil
	}
	admin, err := WithDatabase(dsn, "postgres")
	if err != nil {
		return err
	}
	db := Open(admin, Options{MaxOpenConns: 1})
	defer db.Close()
	var exists bool
	if err := db.NewRaw("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = ?)", name).Scan(ctx, &exists); err != nil {
		return Translate(err)
	}
	if exists {
		return nil
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+quoteIdent(name)); err != nil {
		// A sibling (another replica starting at the same time) may have
		// created it between the check and the CREATE: PostgreSQL then
		// answers duplicate_database (42P04) or, when both CREATEs ran at
		// once, a unique violation on pg_database. Either way, or on any
		// other error, the database now existing is success.
		var again bool
		if qerr := db.NewRaw("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = ?)", name).Scan(ctx, &again); qerr == nil && again {
			return nil
		}
		return fmt.Errorf("create database %s: %w", name, Translate(err))
	}
	return nil
}

// migrationLockKey is the key of the transaction-level advisory lock that
// serialises the migrations of concurrent starts (WithMigrationLock).
const migrationLockKey int64 = 0x666c65657431 // "fleet1"

// migrationLockPoll is how often a start waiting for the migration lock
// tries it again.
const migrationLockPoll = 100 * time.Millisecond

// WithMigrationLock runs fn while holding the migration lock of db's
// database, waiting for it as long as ctx allows: concurrent starts (N
// replicas of fleetapi serve, a migrate job) take turns instead of failing
// on bun's lock row ("migrations table is already locked"). The lock is a
// transaction-level advisory lock held by a transaction of its own, open
// while fn runs on db's other connections (db needs at least two): it is
// released when the transaction ends, also when the process dies, and it
// works through a transaction pooler, which keeps an open transaction on
// one server connection. A start that finds the lock taken ends its
// transaction and tries again later, so that waiting starts hold no
// server connection a pooler would need for the migrations.
func WithMigrationLock(ctx context.Context, db *bun.DB, fn func(ctx context.Context) error) error {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration lock: %w", Translate(err))
		}
		var got bool
		if err := tx.NewRaw("SELECT pg_try_advisory_xact_lock(?)", migrationLockKey).Scan(ctx, &got); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("migration lock: %w", Translate(err))
		}
		if got {
			defer tx.Rollback() //nolint:errcheck // ending the transaction releases the lock
			return fn(ctx)
		}
		_ = tx.Rollback()
		select {
		case <-ctx.Done():
			return fmt.Errorf("migration lock: waiting for another start's migrations: %w", ctx.Err())
		case <-time.After(migrationLockPoll):
		}
	}
}

// Migrator returns bun's migrator over the embedded migrations.
func Migrator(db *bun.DB) (*migrate.Migrator, error) {
	m, err := migrations.New()
	if err != nil {
		return nil, err
	}
	return migrate.NewMigrator(db, m, migrate.WithMarkAppliedOnSuccess(true)), nil
}

// Migrate applies every pending migration, under the migration lock
// (WithMigrationLock: concurrent starts wait for each other; the first
// migrates, the others find nothing to do) and under bun's lock row (which
// a start of an older version takes alone).
func Migrate(ctx context.Context, db *bun.DB) error {
	m, err := Migrator(db)
	if err != nil {
		return err
	}
	return WithMigrationLock(ctx, db, func(ctx context.Context) error {
		if err := m.Init(ctx); err != nil {
			return Translate(err)
		}
		if err := lockRow(ctx, m); err != nil {
			return fmt.Errorf("migrate: %w (another process holds bun's lock row in bun_migration_locks; if none is running, a crashed one left it: delete the row)", Translate(err))
		}
		defer m.Unlock(ctx) //nolint:errcheck // the lock row is removed with best effort
		if _, err := m.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate: %w", Translate(err))
		}
		return nil
	})
}

// migrationRowWait bounds how long Migrate waits for bun's lock row, which
// only a start of a version before the migration lock (or a crashed
// migration) holds while Migrate holds the migration lock.
const migrationRowWait = 30 * time.Second

// lockRow takes bun's lock row, waiting up to migrationRowWait while
// another process holds it.
func lockRow(ctx context.Context, m *migrate.Migrator) error {
	deadline := time.Now().Add(migrationRowWait)
	for {
		err := m.Lock(ctx)
		if err == nil || !strings.Contains(err.Error(), "already locked") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(migrationLockPoll):
		}
	}
}

// WithDatabase returns dsn with its database name replaced by name.
func WithDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func databaseName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
