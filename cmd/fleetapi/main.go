// Command fleetapi runs the fleetapi client API and its tools: the server
// (serve, dev), schema migrations, data import, token management, the
// policy tools and the OpenAPI document. Configuration comes from the
// environment (FLEET_*, OTEL_*), and flags override it.
//
// Data goes to standard output and progress to standard error; the exit
// status is 0 on success (and for -h), 1 when a command fails and 2 for a
// mistake in the command line (docs/design.md §7).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	tuneGC(os.Args[1:], os.Getenv)
	code := mainWith(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// mainWith runs the program and returns its exit status, after telling
// stderr what went wrong (and, for a usage error, how to get the usage).
func mainWith(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := runWith(ctx, args, getenv, console{out: stdout, log: stderr})
	code := exitCode(err)
	if code != exitOK {
		fmt.Fprintln(stderr, "fleetapi:", err)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "run `%s -h` for usage\n", strings.TrimSpace("fleetapi "+ue.command))
	}
	return code
}

const usage = `usage: fleetapi COMMAND [flags] [arguments]

commands:
  serve                      run the API server (migrates first unless --no-migrate)
  dev                        demo: load the demo data into the database fleetapi_dev, print demo tokens, serve
  migrate [up|down|status]   schema migrations (down needs --confirm)
  import FILE                load a tenant data file (docs/design.md §8)
  generate [--preset large]  load a synthetic data set with COPY, print load-test tokens
  token create|list|revoke   manage API tokens
  tenant export|erase        offboard a tenant: export an account's subtree, erase it (--confirm)
  usage export               every account's usage of a range of days, CSV or JSON lines (billing)
  policy test|check|explain|diff  run, validate, explain and compare Rego policy sets
  openapi                    print the OpenAPI document
  version                    print the version, commit, Go version and policy revision

Run ` + "`fleetapi COMMAND -h`" + ` for the flags and arguments of a command.
Data goes to standard output, progress to standard error. Exit status: 0 on
success, 1 when the command fails, 2 for a mistake in the command line.
`

// run is the whole program for tests: data and progress both go to
// stdout. It parses args (without the program name) and reads
// configuration through getenv.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return runWith(ctx, args, getenv, console{out: stdout, log: stdout})
}

// runWith is the whole program: it parses args (without the program name),
// reads configuration through getenv, writes data to con.out and progress
// to con.log. -h anywhere answers the usage and nil.
func runWith(ctx context.Context, args []string, getenv func(string) string, con console) error {
	err := dispatch(ctx, args, getenv, con)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// commands are the subcommands of docs/design.md §7 by name, each run with the
// arguments after its name.
func commands() map[string]runFunc {
	cmds := map[string]runFunc{
		"serve": runServe, "dev": runDev, "migrate": runMigrate, "import": runImport, "generate": runGenerate,
		"openapi": runOpenAPI, "version": runVersion,
	}
	for _, g := range groups() {
		cmds[g.name] = g.run
	}
	return cmds
}

// groups are the commands made of subcommands.
func groups() []group {
	return []group{tokenGroup(), tenantGroup(), policyGroup(), usageGroup()}
}

// tokenGroup is `fleetapi token`.
func tokenGroup() group {
	return newGroup("token", "Manage the API tokens of an account (docs/design.md §3).",
		subcommand{"create", "create a token and print its secret (shown once)", runTokenCreate},
		subcommand{"list", "list the tokens of an account (never their secrets)", runTokenList},
		subcommand{"revoke", "revoke tokens by id", runTokenRevoke})
}

// tenantGroup is `fleetapi tenant`.
func tenantGroup() group {
	return newGroup("tenant", "Offboard a tenant (docs/design.md §12): export an account's subtree in the import format, erase it.",
		subcommand{"export", "write an account's subtree in the import format (docs/design.md §8)", runTenantExport},
		subcommand{"erase", "delete an account's subtree in one transaction (needs --confirm)", runTenantErase})
}

// usageGroup is `fleetapi usage`: the operator's view of usage metering
// (docs/design.md §12).
func usageGroup() group {
	return newGroup("usage", "Usage metering for billing (docs/design.md §12): what the API served each account, per UTC day and route.",
		subcommand{"export", "write every account's usage of a range of days as CSV or JSON lines", runUsageExport})
}

// policyGroup is `fleetapi policy`.
func policyGroup() group {
	return newGroup("policy", "Run, validate and explain the Rego policy (docs/design.md §6).",
		subcommand{"test", "run the Rego tests of a policy set (the embedded one without DIR) with coverage", runPolicyTest},
		subcommand{"check", "compile a policy set, run its tests, verify every scope rule translates to SQL", runPolicyCheck},
		subcommand{"explain", "show the decision for a token calling a route, or making a management change, and the conditions that failed", runExplain},
		subcommand{"diff", "compare two policy sets: the decisions and rows NEW grants or takes away (exit 3 when it widens access)", runPolicyDiff},
		subcommand{"routes", "print the routes module (data.fleet.api.routes) OPA's own tools need, or write it into a policy directory", runPolicyRoutes})
}

// dispatch runs the command args[0] with the rest of args.
func dispatch(ctx context.Context, args []string, getenv func(string) string, con console) error {
	if len(args) == 0 {
		fmt.Fprint(con.log, usage)
		return usagef("", "no command given")
	}
	cmd, rest := args[0], args[1:]
	if run, ok := commands()[cmd]; ok {
		return run(ctx, rest, getenv, con)
	}
	if isHelp(cmd) {
		fmt.Fprint(con.out, usage)
		return nil
	}
	return usagef("", "unknown command %q", cmd)
}
