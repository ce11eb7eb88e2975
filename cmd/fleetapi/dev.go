package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/pgserver"
	"github.com/fleetapi/fleetapi/webhook"
)

// devDatabase is the database `fleetapi dev` uses on the server it finds,
// never the one `serve` uses by default (docs/design.md §7).
const devDatabase = "fleetapi_dev"

// runDev is the one-command demo: find or start PostgreSQL (docs/design.md §7),
// use its database fleetapi_dev (or the one --database-url names), refuse
// it when it holds accounts that are not demo data, migrate, load the demo
// data, print the demo tokens with example curl lines, and serve until
// interrupted.
func runDev(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("dev", "[flags]", `One-command demo: find PostgreSQL (the server of FLEET_DATABASE_URL, else one on
127.0.0.1:5432, else a private cluster started from the installed binaries),
use its database `+devDatabase+` (never serve's; --database-url names another),
load the demo data, print the demo tokens and curl lines, and serve.

The demo tokens' secrets are public, so dev refuses a database that holds any
account that is not in the demo data.`)
	cfg, err := defaultConfig(getenv)
	if err != nil {
		return err
	}
	cfg.flags(cmd.fs)
	dataDir := ".fleetapi/postgres"
	cmd.fs.StringVar(&dataDir, "pg-dir", dataDir, "where a private PostgreSQL cluster lives when none is found")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	srv, err := pgserver.Find(ctx, cfg.DatabaseURL, dataDir, con.log)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(con.log, "stopping private PostgreSQL:", err)
		}
	}()
	if cfg.DatabaseURL, err = devDatabaseURL(srv.URL, cmd.set("database-url")); err != nil {
		return err
	}
	name := databaseName(cfg.DatabaseURL)
	fmt.Fprintf(con.log, "dev: using database %q\n", name)

	// Look before migrating: a database that is not ours stays untouched.
	cfg.NoMigrate = true
	db, err := openDatabase(ctx, cfg, nil)
	if err != nil {
		return err
	}
	err = loadDemo(ctx, db, name, con)
	db.Close()
	if err != nil {
		return err
	}
	cfg.AllowDemoTokens = true
	if cfg.WebhookKeys == nil {
		// A key for this run only: the demo's webhook secrets are sealed
		// with it, and a later run cannot open them (rotate to sign again).
		if cfg.WebhookKeys, err = runWebhookKey(); err != nil {
			return err
		}
	}
	cfg.ListenURL = "" // the auth cache listens on dev's own database
	return serve(ctx, cfg, getenv, con, func(addr string) {
		printDemoTokens(con.out, addr, name)
		fmt.Fprintf(con.out, "The tenant walkthrough (docs/tenants.md: limits, quotas, usage, export, erase) runs fleetapi\ncommands on this server's database; its first two lines for this server:\n\n%s\n", tenantWalkthroughVars(addr, cfg.DatabaseURL))
		fmt.Fprintf(con.out, "Live data (docs/live.md): a tracker posts readings, and the overspeed notification arrives on\nthe stream.\n\n%s\n", liveWalkthrough(addr))
	})
}

// devDatabaseURL is the database dev uses on the server found at found:
// the one --database-url named when it was given (explicit), else the
// database fleetapi_dev on the same server.
func devDatabaseURL(found string, explicit bool) (string, error) {
	if explicit {
		return found, nil
	}
	return storage.WithDatabase(found, devDatabase)
}

// loadDemo refuses a database holding accounts that are not demo data,
// then migrates it and imports the demo data (a second run adds nothing).
func loadDemo(ctx context.Context, db *bun.DB, name string, con console) error {
	foreign, err := demodata.ForeignAccounts(ctx, db)
	if err != nil {
		return fmt.Errorf("dev: database %q: %w", name, err)
	}
	if len(foreign) > 0 {
		quoted := make([]string, len(foreign))
		for i, u := range foreign {
			quoted[i] = fmt.Sprintf("%q", u)
		}
		if len(quoted) > 10 {
			quoted = append(quoted[:10], fmt.Sprintf("and %d more", len(foreign)-10))
		}
		return fmt.Errorf("dev: refusing database %q: it holds accounts that are not in the demo data (%s), and dev would add tokens whose secrets are public; use an empty database (--database-url) or drop %q",
			name, strings.Join(quoted, ", "), name)
	}
	if err := storage.Migrate(ctx, db); err != nil {
		return err
	}
	res, err := importfile.Load(ctx, db, bytes.NewReader(demodata.File()))
	if err != nil {
		return fmt.Errorf("demo data: %w", err)
	}
	fmt.Fprintf(con.log, "demo data loaded into %q: %s\n", name, res)
	return nil
}

func printDemoTokens(w io.Writer, addr, dbName string) {
	fmt.Fprintf(w, "\nfleetapi is serving http://%s/api/v2 with the demo data of database %q.\n", addr, dbName)
	fmt.Fprintf(w, "Demo tokens (their secrets are public: `fleetapi serve` refuses a database where they work):\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tTYPE\tTOKEN\tWHAT IT SHOWS")
	for _, t := range demodata.Tokens() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Username, t.AccountType, t.Secret, t.Note)
	}
	_ = tw.Flush()
	toks := demodata.Tokens()
	if len(toks) > 0 {
		fmt.Fprintf(w, "\nTry:\n  curl -s -H 'Authorization: Bearer %s' http://%s/api/v2/me\n", toks[0].Secret, addr)
		fmt.Fprintf(w, "  curl -s -H 'Authorization: %s' http://%s/api/v2/me   # the bare form works too\n", toks[0].Secret, addr)
		fmt.Fprintf(w, "  curl -s http://%s/api/v2/me   # 401 AUTH_REQUIRED\n\n", addr)
	}
	fmt.Fprintf(w, "The management API (docs/management.md): a manager onboards a customer, which creates a\nsubaccount, grants it a device and mints a read-only integration token.\n\n%s\n", managementWalkthrough(addr))
}

// runWebhookKey is a webhook sealing key for one run of dev (FLEET_WEBHOOK_KEY
// unset): random, never written anywhere.
func runWebhookKey() (*webhook.KeyRing, error) {
	key := make([]byte, webhook.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return webhook.NewKeyRing(key)
}
