// Command fleetops is fleetapi's operations tool: the operational runs on
// loopback (replicas, load, outage, flood), each of which builds
// ./cmd/fleetapi, starts its own replicas on a database of its own and
// prints its figures with PASS/FAIL checks (docs/operations.md), and the
// load harness (bench), which measures a running server against its
// database floor (docs/performance.md).
//
//	go run ./cmd/fleetops <run> [flags]   (from inside the fleetapi module)
//
// -h after a run lists its flags. Exit status: 0 when every check passed
// (and for -h), 1 when a check or the run failed, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/bench"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/cli"
	"github.com/fleetapi/fleetapi/cmd/fleetops/internal/ops"
)

// main runs fleetops until it ends or is interrupted (SIGINT, SIGTERM:
// the runs then stop what they started) and exits with run's status.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err to stderr and returns the exit status for it: 0 for
// none or -h, 2 for a usage error, 1 for any other.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case cli.IsUsage(err):
		fmt.Fprintf(stderr, "fleetops: %v\n(fleetops -h lists the runs, fleetops RUN -h a run's flags)\n", err)
		return 2
	}
	fmt.Fprintln(stderr, "fleetops:", err)
	return 1
}

// command is one subcommand of fleetops.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error
}

// commands lists the subcommands in the order of the usage text: the
// operational runs, then the harness.
func commands() []command {
	var out []command
	for _, r := range ops.Runs() {
		out = append(out, command{r.Name, r.Summary, func(ctx context.Context, args []string, _ func(string) string, stdout io.Writer) error {
			return r.Execute(ctx, args, stdout)
		}})
	}
	return append(out,
		command{"bench", "the load harness: scenarios against a running server and its database floor (--tokens FILE)", bench.Run},
		command{"httpfloor", "a trivial Go handler on loopback: the HTTP floor of GET /me (scripts/me-floor.sh)", bench.ServeHTTPFloor})
}

// usage is the text of fleetops -h.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: fleetops <run> [flags]   (go run ./cmd/fleetops from inside the fleetapi module)\n\nruns:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString(`
Every address a run talks to must be on loopback (127.0.0.0/8, ::1).
The runs other than bench take --pg URL (admin URL of the shared PostgreSQL)
and --keep (keep the work folder). 'fleetops <run> -h' lists a run's flags.
Exit status: 0 when every check passed, 1 when one failed, 2 on a usage error.
`)
	return b.String()
}

// run is the whole program: it parses args (without the program name),
// reads the environment through getenv and writes its output to stdout.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("no run given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return nil
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, rest, getenv, stdout)
		}
	}
	return cli.Usagef("unknown run %q", name)
}
