package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/synth"
)

// runGenerate is `fleetapi generate`: migrate, then write a deterministic
// synthetic data set with COPY and print the harness tokens (docs/design.md §7
// extension; docs/performance.md).
func runGenerate(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("generate", "[flags]", `Write a deterministic synthetic data set with COPY (docs/performance.md) and
print the load-test tokens (admin, manager, user, subaccount, then the pool of
the mixed workload: every manager, many users and subaccounts) as JSON lines on
standard output, or into --tokens FILE; progress goes to standard error.`)
	cfg := databaseCommand(cmd, getenv)
	fs := cmd.fs
	preset := fs.String("preset", "small", "data set size: small (about 1% of large) or large")
	seed := fs.Uint64("seed", 1, "random seed: the same seed, sizes and --today give the same rows")
	force := fs.Bool("force", false, "empty the fleetapi tables of a database that already holds data (destroys it)")
	tokens := fs.String("tokens", "", "write the harness tokens as JSON lines to this file (mode 0600) instead of stdout")
	today := fs.String("today", "", "reference day YYYY-MM-DD for dates and the due share (default: today, UTC)")
	sizes := map[string]*int{}
	for _, name := range []string{"managers", "users", "subaccounts", "devices", "services", "reports", "events", "passengers"} {
		sizes[name] = fs.Int(name, -1, "override the preset's number of "+name)
	}
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	gc, err := synth.Preset(*preset)
	if err != nil {
		return usagef(cmd.name, "generate: %v", err)
	}
	gc.Seed, gc.Force, gc.Progress = *seed, *force, con.log
	for name, dst := range map[string]*int{
		"managers": &gc.Managers, "users": &gc.Users, "subaccounts": &gc.Subaccounts, "devices": &gc.Devices,
		"services": &gc.Services, "reports": &gc.Reports, "events": &gc.Events, "passengers": &gc.Passengers,
	} {
		if v := *sizes[name]; v >= 0 {
			*dst = v
		}
	}
	if *today != "" {
		d, err := storage.ParseDate(*today)
		if err != nil {
			return usagef(cmd.name, "generate: --today: %v", err)
		}
		gc.Today = d.Time
	}

	url := cfg.databaseURL()
	if err := storage.EnsureDatabase(ctx, url); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	// COPY chunks, their foreign-key checks and VACUUM take longer than the
	// server's per-read timeout.
	db := storage.Open(url, storage.Options{MaxOpenConns: 2, ReadTimeout: time.Hour, WriteTimeout: time.Hour})
	defer db.Close()
	if err := storage.Migrate(ctx, db); err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(con.log, "generating preset %s, seed %d\n", *preset, gc.Seed)
	res, err := synth.Generate(ctx, db, gc)
	if errors.Is(err, synth.ErrNotEmpty) {
		return fmt.Errorf("generate: %w", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(con.log, "generated in %.1fs (load %.1fs, vacuum+analyze %.1fs); reference day %s\n",
		time.Since(start).Seconds(), res.Load.Seconds(), res.Analyze.Seconds(), res.Today.Format(storage.DateLayout))
	return writeTokens(res.Tokens, *tokens, con)
}

// writeTokens writes the generated tokens as JSON lines to path, or to
// con.out when path is empty.
func writeTokens(toks []synth.Token, path string, con console) error {
	if path == "" {
		return encodeTokens(con.out, toks)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("generate: tokens: %w", err)
	}
	err = encodeTokens(f, toks)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("generate: tokens: %w", err)
	}
	fmt.Fprintf(con.log, "%d tokens (admin, manager, user, subaccount, and the mixed workload's pool) written to %s\n", len(toks), path)
	return nil
}

func encodeTokens(w io.Writer, toks []synth.Token) error {
	enc := json.NewEncoder(w)
	for _, t := range toks {
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	return nil
}
