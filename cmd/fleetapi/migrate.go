package main

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/fleetapi/fleetapi/migrations"
	"github.com/fleetapi/fleetapi/storage"
)

const migrateDoc = `Schema migrations (bun's migrator; concurrent runs and starts wait for each other):
  up      apply the pending migrations (the default)
  down    roll back the last group of migrations: this drops what they made,
          data included. Without --confirm it only says what it would drop.
  status  list the migrations and whether they are applied
The action may come before or after the flags.`

func runMigrate(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("migrate", "[up|down|status] [flags]", migrateDoc)
	cfg := databaseCommand(cmd, getenv)
	confirm := cmd.fs.Bool("confirm", false, "with down: really roll back (drop the tables and data the group made)")
	if len(args) > 0 && args[0] == "help" {
		args = []string{"-h"} // the action "help" is -h
	}
	// The action may come before or after the flags (parse); a second
	// argument is unexpected, not an unknown action.
	if err := cmd.parseArgs(args, con, 0, 1); err != nil {
		return err
	}
	action := "up"
	if cmd.fs.NArg() == 1 {
		action = cmd.fs.Arg(0)
	}
	switch action {
	case "up", "down", "status":
	default:
		return usagef("migrate", "migrate: unknown action %q (want up, down or status)", action)
	}
	if *confirm && action != "down" {
		return usagef("migrate", "migrate %s: --confirm applies to migrate down only", action)
	}
	if err := storage.EnsureDatabase(ctx, cfg.databaseURL()); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	// A migration that rewrites a large table (20270105000001 on a million
	// services) takes longer than the server's per-read timeout.
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2, ReadTimeout: time.Hour, WriteTimeout: time.Hour})
	defer db.Close()
	m, err := storage.Migrator(db)
	if err != nil {
		return err
	}
	// bun's tables are created under the migration lock: a concurrent
	// start creating them at the same moment would make one of the two
	// CREATE TABLE IF NOT EXISTS fail.
	if err := storage.WithMigrationLock(ctx, db, m.Init); err != nil {
		return fmt.Errorf("database: %w", storage.Translate(err))
	}
	switch action {
	case "up":
		if err := storage.Migrate(ctx, db); err != nil {
			return err
		}
		fmt.Fprintln(con.out, "migrations applied")
	case "down":
		return migrateDown(ctx, db, m, databaseName(cfg.databaseURL()), *confirm, con)
	case "status":
		ms, err := m.MigrationsWithStatus(ctx)
		if err != nil {
			return storage.Translate(err)
		}
		for _, mg := range ms {
			state := "pending"
			if mg.IsApplied() {
				state = fmt.Sprintf("applied (group %d, %s)", mg.GroupID, mg.MigratedAt.Format("2006-01-02 15:04:05"))
			}
			fmt.Fprintf(con.out, "%s_%s\t%s\n", mg.Name, mg.Comment, state)
		}
	}
	return nil
}

// migrateDown says what rolling back the last group drops and, with
// confirm, does it under the migrator's lock.
func migrateDown(ctx context.Context, db *bun.DB, m *migrate.Migrator, dbName string, confirm bool, con console) error {
	ms, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return storage.Translate(err)
	}
	g := ms.LastGroup()
	if g.IsZero() {
		fmt.Fprintln(con.out, "nothing to roll back")
		return nil
	}
	verb := "will"
	if !confirm {
		verb = "would"
	}
	fmt.Fprintf(con.out, "migrate down %s roll back group %d (%s) of database %q, running:\n", verb, g.ID, g.Migrations, dbName)
	for i := len(g.Migrations) - 1; i >= 0; i-- {
		if err := describeDown(ctx, db, g.Migrations[i], con); err != nil {
			return err
		}
	}
	if !confirm {
		return usagef("migrate", "migrate down: nothing was changed; run it again with --confirm to drop the above")
	}
	return storage.WithMigrationLock(ctx, db, func(ctx context.Context) error {
		if err := m.Lock(ctx); err != nil {
			return storage.Translate(err)
		}
		defer m.Unlock(ctx) //nolint:errcheck // the lock row is removed with best effort
		done, err := m.Rollback(ctx)
		if err != nil {
			return storage.Translate(err)
		}
		fmt.Fprintf(con.out, "rolled back group %d: %s\n", done.ID, done.Migrations)
		return nil
	})
}

var dropTableRe = regexp.MustCompile(`(?is)DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?([^;]+);`)

// describeDown prints the statements of a migration's down file and, for
// the tables it drops, how many rows they hold now.
func describeDown(ctx context.Context, db *bun.DB, mg migrate.Migration, con console) error {
	name := mg.String() + ".down.sql"
	b, err := fs.ReadFile(migrations.Files(), name)
	if err != nil {
		return fmt.Errorf("migrate down: %w", err)
	}
	fmt.Fprintf(con.out, "  %s:\n", name)
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimRight(line, " \t\r"); line != "" && !strings.HasPrefix(line, "--") {
			fmt.Fprintf(con.out, "    %s\n", line)
		}
	}
	for _, m := range dropTableRe.FindAllStringSubmatch(string(b), -1) {
		for _, t := range strings.Split(m[1], ",") {
			t = strings.TrimSpace(t)
			var n int64
			if err := db.NewRaw("SELECT count(*) FROM ?", bun.Ident(t)).Scan(ctx, &n); err != nil {
				continue // the table is not there: nothing of it is lost
			}
			fmt.Fprintf(con.out, "    -- drops table %s with its %d rows\n", t, n)
			if err := describePartitions(ctx, db, t, con); err != nil {
				return err
			}
		}
	}
	return nil
}

// describePartitions names the partitions of a partitioned table a down
// file drops (dropping the parent drops them) with how many rows each holds.
func describePartitions(ctx context.Context, db *bun.DB, table string, con console) error {
	var parts []string
	if err := db.NewRaw(`SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass(?) ORDER BY c.relname`, table).Scan(ctx, &parts); err != nil {
		return fmt.Errorf("migrate down: the partitions of %s: %w", table, storage.Translate(err))
	}
	for _, p := range parts {
		var n int64
		if err := db.NewRaw("SELECT count(*) FROM ?", bun.Ident(p)).Scan(ctx, &n); err != nil {
			continue
		}
		fmt.Fprintf(con.out, "    -- drops table %s with its %d rows (a partition of %s)\n", p, n, table)
	}
	return nil
}

// databaseName is the database a URL names, for messages.
func databaseName(dsn string) string {
	if u, err := url.Parse(dsn); err == nil {
		return strings.TrimPrefix(u.Path, "/")
	}
	return dsn
}
