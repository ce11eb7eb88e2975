package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fleetapi/fleetapi/storage"
)

// runDev is the one-command demo: find or start PostgreSQL (DESIGN §7),
// migrate, load the demo data, print the demo tokens with example curl
// lines, and serve until interrupted.
func runDev(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := defaultConfig(getenv)
	if err != nil {
		return err
	}
	fs := newFlagSet("dev", stdout)
	cfg.flags(fs)
	dataDir := ".fleetapi/postgres"
	fs.StringVar(&dataDir, "pg-dir", dataDir, "where a private PostgreSQL cluster lives when none is found")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv, err := storage.FindServer(ctx, cfg.DatabaseURL, dataDir, stdout)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(stdout, "stopping private PostgreSQL:", err)
		}
	}()
	cfg.DatabaseURL = srv.URL

	db, err := openDatabase(ctx, cfg, nil)
	if err != nil {
		return err
	}
	res, err := storage.NewStore(db).Import(ctx, bytes.NewReader(storage.DemoData()))
	db.Close()
	if err != nil {
		return fmt.Errorf("demo data: %w", err)
	}
	fmt.Fprintf(stdout, "demo data loaded: %s\n", res)
	cfg.NoMigrate = true

	return serve(ctx, cfg, getenv, stdout, func(addr string) {
		printDemoTokens(stdout, addr)
	})
}

func printDemoTokens(w io.Writer, addr string) {
	fmt.Fprintf(w, "\nfleetapi is serving http://%s/api/v2 with the demo data. Demo tokens:\n\n", addr)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tTYPE\tTOKEN\tWHAT IT SHOWS")
	for _, t := range storage.DemoTokens() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Username, t.AccountType, t.Secret, t.Note)
	}
	_ = tw.Flush()
	toks := storage.DemoTokens()
	if len(toks) > 0 {
		fmt.Fprintf(w, "\nTry:\n  curl -s -H 'Authorization: Bearer %s' http://%s/api/v2/me\n", toks[0].Secret, addr)
		fmt.Fprintf(w, "  curl -s -H 'Authorization: %s' http://%s/api/v2/me   # the bare form works too\n", toks[0].Secret, addr)
		fmt.Fprintf(w, "  curl -s http://%s/api/v2/me   # 401 AUTH_REQUIRED\n\n", addr)
	}
}
