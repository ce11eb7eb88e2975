// Package synth writes a deterministic synthetic data set of fleet size
// into a database (`fleetapi generate`), for load tests and performance
// measurements. It is a trusted whole-table job, never used on the request
// path: it empties and fills the tenant tables with COPY through a raw
// database handle, without a policy scope, using storage's bun models and
// sentinels.
package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
)

// ErrNotEmpty is returned by Generate for a database that already holds
// fleetapi data, unless Config.Force is set.
var ErrNotEmpty = errors.New("database is not empty")

// TokenRateLimit is the per-minute rate limit of the generated tokens:
// high enough that a load test is never throttled.
const TokenRateLimit = 10_000_000

// Config sizes and seeds a synthetic data set (fleetapi generate). The
// same seed, sizes and Today always give the same rows (token secrets
// excepted: they are random, so that a known seed never yields a known
// token).
type Config struct {
	// Seed seeds every random stream of the generator (math/rand/v2 PCG).
	Seed uint64
	// Managers, Users and Subaccounts are account counts; one admin is
	// always created. Users are spread over managers unevenly (the first
	// manager has the most), subaccounts over users at random.
	Managers, Users, Subaccounts int
	// Devices are objects, spread evenly over users.
	Devices int
	// Services, Reports, Events and Passengers are row counts; services
	// are spread evenly over devices, the others evenly over users.
	Services, Reports, Events, Passengers int
	// Grants is the most devices granted to one subaccount (at least 1).
	Grants int
	// Today is the reference day of the dates (days_last, schedules, the
	// share of due services); the zero time means the current UTC day.
	Today time.Time
	// Force empties the fleetapi tables of a database that holds data;
	// without it such a database is refused with ErrNotEmpty.
	Force bool
	// Progress receives one line per loaded table; nil for none.
	Progress io.Writer
}

// Preset returns the configuration of a named preset with seed 1:
// "large" is the fleet-scale data set of the performance measurements
// (docs/performance.md), "small" about 1% of it for tests.
func Preset(name string) (Config, error) {
	switch name {
	case "large":
		return Config{Seed: 1, Managers: 50, Users: 10_000, Subaccounts: 2_000, Devices: 200_000,
			Services: 1_000_000, Reports: 100_000, Events: 100_000, Passengers: 100_000, Grants: 10}, nil
	case "small":
		return Config{Seed: 1, Managers: 5, Users: 100, Subaccounts: 20, Devices: 2_000,
			Services: 10_000, Reports: 1_000, Events: 1_000, Passengers: 1_000, Grants: 10}, nil
	}
	return Config{}, fmt.Errorf("unknown preset %q (want small or large)", name)
}

// validate checks the sizes against what the generator can build.
func (c Config) validate() error {
	switch {
	case c.Managers < 1 || c.Users < 1 || c.Subaccounts < 1:
		return fmt.Errorf("%w: generate: at least one manager, user and subaccount", storage.ErrInvalid)
	case c.Devices < c.Users:
		return fmt.Errorf("%w: generate: %d devices for %d users: every user needs one", storage.ErrInvalid, c.Devices, c.Users)
	case c.Devices > maxGeneratedDevices:
		return fmt.Errorf("%w: generate: at most %d devices", storage.ErrInvalid, maxGeneratedDevices)
	case c.Services < 0 || c.Reports < 0 || c.Events < 0 || c.Passengers < 0:
		return fmt.Errorf("%w: generate: negative row count", storage.ErrInvalid)
	case (c.Services+c.Devices-1)/c.Devices > minEligibleKinds:
		return fmt.Errorf("%w: generate: at most %d services per device", storage.ErrInvalid, minEligibleKinds)
	case c.Grants < 1:
		return fmt.Errorf("%w: generate: grants must be 1 or more", storage.ErrInvalid)
	}
	return nil
}

// Token is a token created by Generate for the load harness.
type Token struct {
	// Role is admin, manager, user or subaccount.
	Role      string `json:"role"`
	Username  string `json:"username"`
	AccountID int64  `json:"account_id"`
	TokenID   int64  `json:"token_id"`
	// Token is the secret, shown once.
	Token string `json:"token"`
	// Pool marks the tokens of the harness's mixed workload (every
	// manager, many users and subaccounts); the four others are the fixed
	// workload's, one per role.
	Pool bool `json:"pool,omitempty"`
}

// TableCount is the number of rows Generate wrote into one table.
type TableCount struct {
	Table   string
	Rows    int64
	Elapsed time.Duration
}

// Result is what Generate wrote.
type Result struct {
	Tables []TableCount
	Tokens []Token
	// Today is the reference day used.
	Today time.Time
	// Load is the time of the transaction that wrote the rows; Analyze
	// the time of the VACUUM (ANALYZE) after it.
	Load, Analyze time.Duration
}

// accountTablesQuery lists accounts and every table that references it,
// directly or through another table's foreign key, each once, in creation
// order (oid): the tables that TRUNCATE accounts must empty with it.
const accountTablesQuery = `WITH RECURSIVE refs(t) AS (
	SELECT 'accounts'::regclass
	UNION
	SELECT c.conrelid::regclass FROM pg_constraint AS c JOIN refs ON c.confrelid = refs.t WHERE c.contype = 'f'
)
SELECT t::text FROM refs ORDER BY t::oid`

// generatedTables returns the tables Generate empties, in load order: the
// tables it writes (written, in their order), then every other table that
// references accounts through foreign keys (tokens, idempotency keys, and
// any tenant table a later migration adds), found in the catalog so that a
// new table holding accounts' rows needs no entry here: it is emptied with
// the others, and its rows make the database not empty.
func generatedTables(ctx context.Context, tx bun.Tx, written []genTable) ([]string, error) {
	var referencing []string
	if err := tx.NewRaw(accountTablesQuery).Scan(ctx, &referencing); err != nil {
		return nil, fmt.Errorf("generate: tables referencing accounts: %w", storage.Translate(err))
	}
	tables := make([]string, 0, len(written)+len(referencing))
	for _, t := range written {
		tables = append(tables, t.name)
	}
	for _, t := range referencing {
		if !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	return tables, nil
}

// Generate writes a deterministic synthetic data set into the migrated
// database db: one admin, the managers, users and subaccounts with device
// grants, devices, services (a share of them due on Today), reports, event
// rules and passengers, and one token per role (admin, manager, user,
// subaccount; all permissions, rate limit TokenRateLimit), plus the pool
// tokens of the mixed workload (Token.Pool). The manager
// token belongs to the manager with the most users, the user token to one
// of that manager's users, and the subaccount token to a subaccount of
// that user holding both privileges.
//
// Rows are written with COPY in one transaction (nothing is written on
// error), then the tables are vacuumed and analysed. It returns ErrNotEmpty
// for a database that holds data unless cfg.Force is set (then the tables
// are emptied first, in the same transaction), storage.ErrInvalid for
// sizes it cannot build, and storage.ErrUnavailable when the database
// cannot be reached.
func Generate(ctx context.Context, db *bun.DB, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.Today.IsZero() {
		cfg.Today = time.Now().UTC()
	}
	cfg.Today = storage.NewDate(cfg.Today).Time
	res := Result{Today: cfg.Today}
	plan := newGenPlan(cfg)

	conn, err := db.Conn(ctx)
	if err != nil {
		return res, storage.Translate(err)
	}
	defer conn.Close()
	start := time.Now()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return res, storage.Translate(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	written := plan.tables()
	tables, err := generatedTables(ctx, tx, written)
	if err != nil {
		return res, err
	}
	if err := prepareGenerate(ctx, tx, tables, cfg.Force); err != nil {
		return res, err
	}
	for _, t := range written {
		began := time.Now()
		c := newCopier(ctx, conn, t.name, t.columns, true)
		if err := t.write(c); err != nil {
			return res, fmt.Errorf("generate %s: %w", t.name, err)
		}
		n, err := c.close()
		if err != nil {
			return res, fmt.Errorf("generate %s: %w", t.name, err)
		}
		tc := TableCount{Table: t.name, Rows: n, Elapsed: time.Since(began)}
		res.Tables = append(res.Tables, tc)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%-14s %9d rows  %6.1fs\n", tc.Table, tc.Rows, tc.Elapsed.Seconds())
		}
	}
	if err := storage.ResumeRowCounting(ctx, tx); err != nil {
		return res, fmt.Errorf("generate: row counters: %w", err)
	}
	if err := resetSequences(ctx, tx); err != nil {
		return res, err
	}
	if res.Tokens, err = plan.createTokens(ctx, storage.NewStore(tx)); err != nil {
		return res, err
	}
	if err := tx.Commit(); err != nil {
		return res, storage.Translate(err)
	}
	res.Load = time.Since(start)

	start = time.Now()
	// The row counters (migration 20261210000002), recounted at the end of
	// the load.
	for _, t := range append(tables, "account_row_counts") {
		if _, err := conn.ExecContext(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return res, fmt.Errorf("vacuum %s: %w", t, storage.Translate(err))
		}
	}
	res.Analyze = time.Since(start)
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "%-14s %9s       %6.1fs\n", "vacuum+analyze", "", res.Analyze.Seconds())
	}
	return res, nil
}

// prepareGenerate locks the tables (generatedTables), refuses data unless
// force, and truncates them, so that the COPY statements of this
// transaction may use FREEZE. Session settings speed up the load without touching the schema:
// asynchronous commit and more memory for the trigram indexes' pending
// lists.
func prepareGenerate(ctx context.Context, tx bun.Tx, tables []string, force bool) error {
	for _, stmt := range []string{
		"SET LOCAL synchronous_commit = off",
		"SET LOCAL work_mem = '256MB'",
		"LOCK TABLE " + strings.Join(tables, ", ") + " IN ACCESS EXCLUSIVE MODE",
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("generate: %s: %w", stmt, storage.Translate(err))
		}
	}
	if !force {
		for _, t := range tables {
			var found bool
			if err := tx.NewRaw("SELECT EXISTS (SELECT 1 FROM "+t+")").Scan(ctx, &found); err != nil {
				return storage.Translate(err)
			}
			if found {
				return fmt.Errorf("%w: table %s has rows (use --force to empty the fleetapi tables first)", ErrNotEmpty, t)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" RESTART IDENTITY"); err != nil {
		return fmt.Errorf("generate: truncate: %w", storage.Translate(err))
	}
	// The loaded rows are counted once at the end (storage.ResumeRowCounting).
	if err := storage.SuspendRowCounting(ctx, tx); err != nil {
		return fmt.Errorf("generate: row counters: %w", err)
	}
	return nil
}

// resetSequences moves each identity past the ids that COPY wrote
// explicitly, so that later inserts (POST /passengers) get fresh ids.
func resetSequences(ctx context.Context, tx bun.Tx) error {
	for _, ti := range [][2]string{
		{"accounts", "id"}, {"objects", "id"}, {"services", "service_id"}, {"reports", "report_id"},
		{"events", "event_id"}, {"passengers", "passenger_id"},
	} {
		q := fmt.Sprintf("SELECT setval(pg_get_serial_sequence('%[1]s', '%[2]s'), COALESCE(max(%[2]s), 0) + 1, false) FROM %[1]s", ti[0], ti[1])
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("generate: sequence of %s: %w", ti[0], storage.Translate(err))
		}
	}
	return nil
}
