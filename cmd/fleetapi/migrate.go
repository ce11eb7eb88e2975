package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/fleetapi/fleetapi/storage"
)

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, fs, err := databaseCommand("migrate", getenv, stdout)
	if err != nil {
		return err
	}
	// The action may come before or after the flags.
	action := "up"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		action = fs.Arg(0)
	}
	if err := storage.EnsureDatabase(ctx, cfg.databaseURL()); err != nil {
		return err
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	m, err := storage.Migrator(db)
	if err != nil {
		return err
	}
	if err := m.Init(ctx); err != nil {
		return storage.Translate(err)
	}
	switch action {
	case "up":
		if err := storage.Migrate(ctx, db); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrations applied")
	case "down":
		if err := m.Lock(ctx); err != nil {
			return err
		}
		defer m.Unlock(ctx) //nolint:errcheck
		g, err := m.Rollback(ctx)
		if err != nil {
			return err
		}
		if g.IsZero() {
			fmt.Fprintln(stdout, "nothing to roll back")
			return nil
		}
		fmt.Fprintf(stdout, "rolled back group %d: %s\n", g.ID, g.Migrations)
	case "status":
		ms, err := m.MigrationsWithStatus(ctx)
		if err != nil {
			return err
		}
		for _, mg := range ms {
			state := "pending"
			if mg.IsApplied() {
				state = fmt.Sprintf("applied (group %d, %s)", mg.GroupID, mg.MigratedAt.Format("2006-01-02 15:04:05"))
			}
			fmt.Fprintf(stdout, "%s_%s\t%s\n", mg.Name, mg.Comment, state)
		}
	default:
		return fmt.Errorf("migrate: unknown action %q (want up, down or status)", action)
	}
	return nil
}
