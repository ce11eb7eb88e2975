// Package ops holds fleetapi's operational runs on loopback, which print
// their figures and PASS/FAIL checks (docs/operations.md records them):
//
//	replicas  two replicas, one Redis: shared limit, one replica stopped mid-load, a Redis outage
//	load      a fixed-concurrency load run with latency percentiles per endpoint; the limiter at work
//	outage    a private PostgreSQL stopped (or frozen) and restarted under load
//	flood     bad tokens and malformed requests from one address next to a good client; slow clients
//	standby   two replicas reading through a streaming standby of a private primary; the standby, then Redis, stopped under load
//
// Every run builds ./cmd/fleetapi, creates its own database (the shared
// server's databases other than fleetapi_ops_* are never touched; the
// outage and standby runs use private clusters), talks to loopback addresses only, is
// bounded in time and in requests, and removes what it started when it
// ends or is interrupted.
package ops

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/procfs"
)

// Run is one operational run: its name, a line for the usage text, and
// flags, which registers the run's own flags and returns its body.
type Run struct {
	Name, Summary string
	flags         func(fs *flag.FlagSet) func(ctx context.Context, e *env) error
}

// Runs lists the runs in the order of the usage text.
func Runs() []Run {
	return []Run{
		{"replicas", "two replicas sharing a Redis limit; one stopped mid-load; a Redis outage", replicasRun},
		{"load", "fixed-concurrency load run; latency per endpoint; the limiter at work", loadRun},
		{"outage", "a private PostgreSQL stopped (or --freeze: frozen) and restarted under load", outageRun},
		{"flood", "bad tokens and malformed requests from one address next to a good client; slow clients", floodRun},
		{"standby", "two replicas reading through a streaming standby; the standby, then Redis, stopped under load", standbyRun},
		{"failover", "two replicas on a Patroni cluster behind HAProxy; the primary killed or frozen under creates and reads, then back as a standby", failoverRun},
	}
}

// common are the flags every run takes.
type common struct {
	adminURL string
	keep     bool
}

// flags registers the common flags in fs.
func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.adminURL, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"admin URL of the shared PostgreSQL on loopback (its databases other than the run's own are never changed)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work folder (binary, replica logs) after the run")
}

// parse registers the flags of run r and the common ones in fs, parses
// args and checks that every address given is on loopback. It returns the
// run's body; flag.ErrHelp after printing the usage for -h.
func (r Run) parse(args []string, stdout io.Writer) (common, func(context.Context, *env) error, error) {
	fs := flag.NewFlagSet("fleetops "+r.Name, flag.ContinueOnError)
	var c common
	c.flags(fs)
	body := r.flags(fs)
	head := fmt.Sprintf("usage: fleetops %s [flags]   (from inside the fleetapi module)\n\n%s\n\nflags:\n", r.Name, r.Summary)
	if err := cli.Parse(fs, args, stdout, head); err != nil {
		return c, nil, err
	}
	if err := cli.CheckPostgres("--pg", c.adminURL); err != nil {
		return c, nil, err
	}
	if f := fs.Lookup("redis"); f != nil { // the replicas run's shared Redis
		if err := cli.CheckRedis("--redis", f.Value.String()); err != nil {
			return c, nil, err
		}
	}
	return c, body, nil
}

// Execute runs r with args (its flags, after the run's name), writing its
// progress and figures to out. It returns an error when a check failed.
func (r Run) Execute(ctx context.Context, args []string, out io.Writer) error {
	c, body, err := r.parse(args, out)
	if err != nil {
		return err
	}
	e, err := newEnv(ctx, r.Name, c, out)
	if err != nil {
		return err
	}
	defer e.close()
	start := time.Now()
	err = body(ctx, e)
	e.logf("%s run finished in %s; load average %s", r.Name, time.Since(start).Round(time.Second), procfs.ReadLoadAverage())
	if err == nil && ctx.Err() != nil {
		err = errors.New("interrupted")
	}
	return err
}
