package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/importfile"
)

func runTenantErase(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("tenant erase", "[flags] USERNAME",
		`Delete the account USERNAME and everything below it (the accounts it manages
and their subaccounts, their devices, grants, tokens, services, reports,
event rules and passengers) in one transaction, as DELETE /accounts/{id}
does. It answers once every replica refuses the subtree's tokens, and
records one account.erase audit event with the counts (actor 0: the
operator); earlier audit events of the erased accounts keep no username or
e-mail. An admin account is not erased. Without --confirm it only says what
it would erase, changes nothing, and exits with status 2. Export the
tenant first (fleetapi tenant export) if its data may be needed again.`)
	cfg := databaseCommand(cmd, getenv)
	confirm := cmd.fs.Bool("confirm", false, "really erase")
	if err := cmd.parseArgs(args, con, 1, 1); err != nil {
		return err
	}
	username := cmd.fs.Arg(0)
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	erased, err := storage.NewStore(db).EraseAccount(ctx, username, !*confirm)
	if err != nil {
		return fmt.Errorf("tenant erase: %w", err)
	}
	verb := "erased"
	if !*confirm {
		verb = "would erase"
	}
	fmt.Fprintf(con.out, "%s %s (account %d) and %d accounts below it:\n", verb, username, erased.Account.ID, len(erased.Accounts)-1)
	for _, table := range storage.EraseTables() {
		if n, ok := erased.Rows[table]; ok {
			fmt.Fprintf(con.out, "  %-17s %d rows\n", table, n)
		}
	}
	fmt.Fprintf(con.out, "  %-17s %d earlier events without the values naming it\n", "audit_events", erased.Scrubbed["audit_events"])
	for _, table := range slices.Sorted(maps.Keys(erased.Scrubbed)) {
		if n := erased.Scrubbed[table]; n > 0 && table != "audit_events" {
			fmt.Fprintf(con.out, "  %-17s %d rows of other accounts without its devices\n", table, n)
		}
	}
	if !*confirm {
		return usagef(cmd.name, "tenant erase: nothing was changed; run it again with --confirm to erase the above")
	}
	return nil
}

func runTenantExport(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("tenant export", "[flags] USERNAME",
		`Write the subtree of the account USERNAME (the account, the accounts below it,
their devices, grants, tokens, services, reports, event rules and passengers)
in the import format (docs/design.md §8), read from one snapshot: `+"`fleetapi import`"+` of
the file into an empty database makes the same rows (docs/tenants.md).
Token secrets are not stored and cannot be exported: each token is written
with the SHA-256 hash of its secret (secret_hash), so that imported tokens
keep working. The file holds personal data and those hashes: keep it as
you keep the database. The root names its manager, which the file does not
hold: import it elsewhere with fleetapi import --under USERNAME (an account
of that installation that may manage it) or --top.`)
	cfg := databaseCommand(cmd, getenv)
	var out string
	cmd.fs.StringVar(&out, "out", "", "write the file here (mode 0600, replaced only once the export is whole) instead of stdout")
	if err := cmd.parseArgs(args, con, 1, 1); err != nil {
		return err
	}
	username := cmd.fs.Arg(0)
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	var (
		res importfile.Result
		err error
	)
	if out == "" {
		res, err = importfile.Export(ctx, db, username, con.out)
	} else {
		err = writeFileAtomic(out, func(f *os.File) error {
			var err error
			res, err = importfile.Export(ctx, db, username, f)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("tenant export: %w", err)
	}
	fmt.Fprintf(con.log, "exported %s: %s\n", username, exportSummary(res))
	return nil
}

// exportSummary says how many records of each section an export wrote.
func exportSummary(res importfile.Result) string {
	s := ""
	for i, sec := range importfile.Sections() {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %s", res[sec.Name].Inserted, sec.Name)
	}
	return s
}

// writeFileAtomic writes path with mode 0600 through a temporary file in
// the same directory, which write fills and which is renamed over path
// only when write succeeds.
func writeFileAtomic(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
