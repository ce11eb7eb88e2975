package main

import (
	"context"
	"fmt"
	"os"

	"github.com/fleetapi/fleetapi/storage"
)

func runImport(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("import", "[flags] FILE", `Load a tenant data file (DESIGN §8) in one transaction, migrating the database
first: a file with any invalid record changes nothing, and the error names the
record. Records that exist (matched on their natural keys) are skipped, so
importing the same file twice adds nothing.`)
	cfg, err := databaseCommand(cmd, getenv)
	if err != nil {
		return err
	}
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(1, 1); err != nil {
		return err
	}
	name := cmd.fs.Arg(0)
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	db, err := openDatabase(ctx, *cfg, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := storage.NewStore(db).Import(ctx, f)
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	fmt.Fprintf(con.out, "imported %s: %s\n", name, res)
	return nil
}
