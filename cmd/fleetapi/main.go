// Command fleetapi runs the fleetapi client API and its tools: the server
// (serve, dev), schema migrations, data import, token management, the
// policy tools and the OpenAPI document. Configuration comes from the
// environment (FLEET_*, OTEL_*), and flags override it.
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "fleetapi:", err)
		}
		os.Exit(1)
	}
}

const usage = `usage: fleetapi <command> [flags]

commands:
  serve                      run the API server (migrates first unless --no-migrate)
  dev                        find or start PostgreSQL, load the demo data, print demo tokens, serve
  migrate [up|down|status]   schema migrations
  import FILE                load a tenant data file (DESIGN §8)
  generate [--preset large]  load a synthetic data set with COPY, print load-test tokens
  token create|list|revoke   manage API tokens
  policy test|check|explain  run, validate and explain the Rego policy
  openapi                    print the OpenAPI document
`

// run is the whole program: it parses args (without the program name),
// reads configuration through getenv and writes its output to stdout.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout)
	case "dev":
		return runDev(ctx, rest, getenv, stdout)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout)
	case "import":
		return runImport(ctx, rest, getenv, stdout)
	case "generate":
		return runGenerate(ctx, rest, getenv, stdout)
	case "token":
		return runToken(ctx, rest, getenv, stdout)
	case "policy":
		return runPolicy(ctx, rest, getenv, stdout)
	case "openapi":
		return runOpenAPI(ctx, rest, getenv, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stdout, usage)
	return fmt.Errorf("unknown command %q", cmd)
}
