// Command ops runs fleetapi's operational checks on loopback and prints
// their figures (docs/operations.md records them):
//
//	go run ./scripts/ops replicas   two replicas, one Redis: shared limit, then one replica stopped mid-load
//	go run ./scripts/ops load       a fixed-concurrency load run with latency percentiles per endpoint
//	go run ./scripts/ops outage     a private PostgreSQL stopped and restarted under load
//	go run ./scripts/ops flood      bad tokens and malformed requests from one address
//
// Every run builds ./cmd/fleetapi, creates its own database (the shared
// server's databases are never touched; the outage run uses a private
// cluster), is bounded in time and in requests, and removes what it started
// when it ends or is interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "ops:", err)
		}
		os.Exit(1)
	}
}

const usage = `usage: go run ./scripts/ops <run> [flags]   (from the module root)

runs:
  replicas  two replicas sharing a Redis limit; one stopped mid-load
  load      fixed-concurrency load run; latency per endpoint; the limiter at work
  outage    a private PostgreSQL stopped and restarted under load
  flood     bad tokens and malformed requests from one address next to a good client

common flags: --pg URL (admin URL of the shared PostgreSQL), --keep (keep the work folder)
'go run ./scripts/ops <run> -h' lists a run's own flags.
`

// common are the flags every run takes.
type common struct {
	adminURL string
	keep     bool
}

func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.adminURL, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"admin URL of the shared PostgreSQL (its databases other than the run's own are never changed)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work folder (binary, replica logs) after the run")
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, usage)
		return errors.New("no run given")
	}
	name, rest := args[0], args[1:]
	fs := flag.NewFlagSet("ops "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	var c common
	c.flags(fs)
	var body func(ctx context.Context, e *env) error
	switch name {
	case "replicas":
		body = replicasRun(fs)
	case "load":
		body = loadRun(fs)
	case "outage":
		body = outageRun(fs)
	case "flood":
		body = floodRun(fs)
	case "help", "-h", "--help":
		fmt.Fprint(out, usage)
		return nil
	default:
		fmt.Fprint(out, usage)
		return fmt.Errorf("unknown run %q", name)
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	e, err := newEnv(ctx, name, c, out)
	if err != nil {
		return err
	}
	defer e.close()
	start := time.Now()
	err = body(ctx, e)
	e.logf("%s run finished in %s; load average %s", name, time.Since(start).Round(time.Second), loadAverage())
	if err == nil && ctx.Err() != nil {
		err = errors.New("interrupted")
	}
	return err
}
