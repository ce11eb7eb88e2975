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
	connector := pgdriver.NewConnector(
		pgdriver.WithDSN(dsn),
		pgdriver.WithDialTimeout(opts.DialTimeout),
		pgdriver.WithReadTimeout(opts.ReadTimeout),
		pgdriver.WithWriteTimeout(opts.WriteTimeout),
		pgdriver.WithResetSessionFunc(discardDeadConn),
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
	return db.WithQueryHook(bunotel.NewQueryHook(hookOpts...))
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
		// A concurrent creator may have won the race.
		if pgErr, ok := err.(pgdriver.Error); ok && pgErr.Field('C') == "42P04" {
			return nil
		}
		return fmt.Errorf("create database %s: %w", name, Translate(err))
	}
	return nil
}

// Migrator returns bun's migrator over the embedded migrations.
func Migrator(db *bun.DB) (*migrate.Migrator, error) {
	m, err := migrations.New()
	if err != nil {
		return nil, err
	}
	return migrate.NewMigrator(db, m, migrate.WithMarkAppliedOnSuccess(true)), nil
}

// Migrate applies every pending migration under the migrator's lock.
func Migrate(ctx context.Context, db *bun.DB) error {
	m, err := Migrator(db)
	if err != nil {
		return err
	}
	if err := m.Init(ctx); err != nil {
		return Translate(err)
	}
	if err := m.Lock(ctx); err != nil {
		return Translate(err)
	}
	defer m.Unlock(ctx) //nolint:errcheck // the lock row is removed with best effort
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", Translate(err))
	}
	return nil
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
