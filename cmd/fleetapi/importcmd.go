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
importing the same file twice adds nothing. A file from fleetapi tenant export
names its root's manager in the source installation: --under USERNAME places
the file's roots (the accounts whose manager is not in the file) under an
account of this database instead, --top at the top level; either must fit the
fixed levels (a user under an admin or a manager, a manager under an admin or
at the top, a subaccount under a user).`)
	cfg := databaseCommand(cmd, getenv)
	var place importfile.Placement
	cmd.fs.StringVar(&place.Under, "under", "", "place the file's root accounts under this existing account")
	cmd.fs.BoolVar(&place.Top, "top", false, "place the file's root accounts at the top level (no manager)")
	if err := cmd.parseArgs(args, con, 1, 1); err != nil {
		return err
	}
	if place.Under != "" && place.Top {
		return usagef(cmd.name, "import: --under and --top exclude each other")
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
	res, err := importfile.LoadPlaced(ctx, db, f, place)
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
