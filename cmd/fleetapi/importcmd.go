package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
)

func runImport(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("import", "[flags] FILE", `Load a tenant data file (docs/design.md §8) in one transaction, migrating the database
first: a file with any invalid record changes nothing, and the error names the
record. Records that exist (matched on their natural keys) are skipped, so
importing the same file twice adds nothing.`)
	cfg := databaseCommand(cmd, getenv)
	if err := cmd.parseArgs(args, con, 1, 1); err != nil {
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
	res, err := importfile.Load(ctx, db, f)
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	fmt.Fprintf(con.out, "imported %s: %s\n", name, res)
	// Say now, not at the next start, that serve will refuse this database.
	if toks, err := demodata.ActiveTokens(ctx, db, time.Now()); err == nil && len(toks) > 0 {
		fmt.Fprintf(con.log, "note: %d demo tokens, whose secrets are published in the demo data, work in this database: `fleetapi serve` refuses to start until they are revoked (`fleetapi serve` names them)\n", len(toks))
	}
	return nil
}
