package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

func policyGroup() group {
	return group{
		name: "policy",
		doc:  "Run, validate and explain the Rego policy (DESIGN §6).",
		subs: [][2]string{
			{"test", "run the Rego tests of a policy set (the embedded one without DIR) with coverage"},
			{"check", "compile a policy set, run its tests, verify every scope rule translates to SQL"},
			{"explain", "show the decision for a token calling a route, and the conditions that failed"},
		},
	}
}

func runPolicy(ctx context.Context, args []string, getenv func(string) string, con console) error {
	action, args, err := policyGroup().split(args, con)
	if err != nil {
		return err
	}
	switch action {
	case "test":
		cmd := newCommand("policy test", "[DIR]", "Run the Rego tests of the policy set in DIR, or of the embedded set, with coverage.")
		if err := cmd.parse(args, con); err != nil {
			return err
		}
		if err := cmd.args(0, 1); err != nil {
			return err
		}
		_, err := policy.RunTests(ctx, cmd.fs.Arg(0), con.out)
		return err
	case "check":
		cmd := newCommand("policy check", "DIR", "Compile the policy set in DIR, run its tests and verify that every scope rule translates to SQL: what `serve` checks before it uses FLEET_POLICY_DIR.")
		if err := cmd.parse(args, con); err != nil {
			return err
		}
		if err := cmd.args(1, 1); err != nil {
			return err
		}
		return policy.Check(ctx, policy.Options{Dir: cmd.fs.Arg(0), Resources: storage.Resources(), CompileScope: storage.CompileScope}, con.out)
	}
	return runExplain(ctx, args, getenv, con)
}

func runExplain(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("policy explain", `--token-id N --route "METHOD /path" [flags]`,
		`Show the decision the policy makes for a token calling a route, with the facts
it decided on and the conditions that did not hold. The route is a template
("GET /events/{id}") or a request path ("GET /events/12", "/api/v2/events/12"),
which is resolved to the template the server would match; a route the API does
not have is refused.`)
	cfg, err := databaseCommand(cmd, getenv)
	if err != nil {
		return err
	}
	cmd.fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "policy set to explain with (FLEET_POLICY_DIR)")
	var tokenID int64
	var route string
	cmd.fs.Int64Var(&tokenID, "token-id", 0, "id of the calling token (see `fleetapi token list`)")
	cmd.fs.StringVar(&route, "route", "", `method and route, e.g. "GET /reports" or "GET /events/12"`)
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(0, 0); err != nil {
		return err
	}
	if tokenID < 1 {
		return usagef(cmd.name, "policy explain: want --token-id N (a token id of `fleetapi token list`)")
	}
	r, err := explainRoute(route)
	if err != nil {
		return usagef(cmd.name, "policy explain: %v", err)
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 1})
	defer db.Close()
	p, err := storage.NewStore(db).PrincipalByTokenID(ctx, tokenID)
	if err != nil {
		return fmt.Errorf("policy explain: %w", err)
	}
	engine, err := policy.New(ctx, policy.Options{Dir: cfg.PolicyDir, Resources: storage.Resources(), CompileScope: storage.CompileScope})
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	in := policy.NewInput(p, r.Method, r.Template, time.Now().UTC())
	x, err := engine.Explain(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(con.out, "token %d (%s) of account %d %q (%s) calling %s\n", p.Token.ID, p.Token.Name,
		p.Account.ID, p.Account.Username, p.Account.Type, r)
	_, err = fmt.Fprintln(con.out, x.String())
	return err
}

// explainRoute reads the --route of policy explain: "METHOD /path", the
// path a template or a request path, with or without the API's base path
// and a query string, resolved to the route the server would match.
func explainRoute(route string) (tenancy.Route, error) {
	method, path, ok := strings.Cut(strings.TrimSpace(route), " ")
	path = strings.TrimSpace(path)
	if !ok || !strings.HasPrefix(path, "/") {
		return tenancy.Route{}, fmt.Errorf(`want --route "METHOD /route", e.g. "GET /reports", not %q`, route)
	}
	path, _, _ = strings.Cut(path, "?")
	if p, ok := strings.CutPrefix(path, api.BasePath); ok && strings.HasPrefix(p, "/") {
		path = p
	}
	return tenancy.ResolveRoute(strings.ToUpper(method), path)
}
