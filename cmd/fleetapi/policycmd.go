package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/tooling/mutation"
)

func runPolicyTest(ctx context.Context, args []string, _ func(string) string, con console) error {
	cmd := newCommand("policy test", "[--min-coverage P | --mutate [--workers N] [--files F,...] [--json]] [DIR]", `Run the Rego tests of the policy set in DIR, or of the embedded set, with coverage.
The command fails when a test fails or when the line coverage of the
policy modules is below --min-coverage percent (default 100: every line
of the set is reached by a test).

With --mutate, apply single-point mutations to the set's policy modules
(negated comparisons, deleted body expressions, string literals and
references swapped for others of their kind, added or removed not, rule
bodies made always true or false), run the set's own tests against each
mutant and report the mutation score and every surviving mutant with its
place. A mutant is killed when a test fails; one that no longer compiles is
counted apart, not as a kill. A survivor that cannot be told apart from the
set (an equivalent mutant) is marked in its module with a comment
"# mutation: equivalent <id> <why>". The command fails when an unmarked
mutant survives, so CI can run it.`)
	mutate := cmd.fs.Bool("mutate", false, "run the mutation tests instead of the tests with coverage")
	workers := cmd.fs.Int("workers", 0, "mutants run in parallel (default GOMAXPROCS)")
	asJSON := cmd.fs.Bool("json", false, "with --mutate: write the report of every mutant as JSON")
	files := cmd.fs.String("files", "", "with --mutate: mutate only these policy modules, comma-separated, as the report names them (fleet/authz/authz.rego)")
	minCoverage := cmd.fs.Float64("min-coverage", policy.DefaultMinCoverage, "fail when the line coverage of the policy modules is below this percentage (0-100)")
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(0, 1); err != nil {
		return err
	}
	if !*mutate {
		if cmd.set("workers") || cmd.set("json") || cmd.set("files") {
			return usagef(cmd.name, "policy test: --workers, --json and --files go with --mutate")
		}
		if !(*minCoverage >= 0 && *minCoverage <= 100) {
			return usagef(cmd.name, "policy test: --min-coverage %v: want a percentage from 0 to 100", *minCoverage)
		}
		rep, err := policy.RunTests(ctx, cmd.fs.Arg(0), con.out)
		if err != nil {
			return err
		}
		return rep.RequireCoverage(*minCoverage)
	}
	if cmd.set("min-coverage") {
		return usagef(cmd.name, "policy test: --min-coverage goes without --mutate")
	}
	var only []string
	if *files != "" {
		only = strings.Split(*files, ",")
	}
	return runMutate(ctx, cmd.fs.Arg(0), mutation.Options{Workers: *workers, Files: only, Progress: con.log}, *asJSON, con)
}

func runPolicyCheck(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("policy check", "[--policy-bundle-key FILE] DIR|BUNDLE|URL", `Check a policy set exactly as serve does at start-up before it uses it: a
directory (FLEET_POLICY_DIR), an OPA bundle file or an HTTP(S) bundle URL
(FLEET_POLICY_BUNDLE). The bundle's bounds, its signature with
FLEET_POLICY_BUNDLE_KEY (or --policy-bundle-key) and its sequence
(FLEET_POLICY_BUNDLE_MIN_SEQUENCE) are checked as serve checks them; then the
set is compiled, its tests run and every scope rule translated to SQL. A set
serve would refuse exits 1 with the reason.`)
	cfg, err := defaultConfig(getenv)
	if err != nil {
		return err
	}
	cmd.fs.StringVar(&cfg.PolicyBundleKey, "policy-bundle-key", cfg.PolicyBundleKey, "PEM public key the bundle's signature must verify against (FLEET_POLICY_BUNDLE_KEY)")
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(1, 1); err != nil {
		return err
	}
	cfg.PolicyDir, cfg.PolicyBundle = "", ""
	switch src := cmd.fs.Arg(0); {
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		cfg.PolicyBundle = src
	default:
		st, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("policy check: %w", err)
		}
		if st.IsDir() {
			cfg.PolicyDir = src
		} else {
			cfg.PolicyBundle = src
		}
	}
	opts, err := cfg.policySource()
	if err != nil {
		return fmt.Errorf("policy check %s: %w", cmd.fs.Arg(0), err)
	}
	opts.Schema = storage.Schema()
	return policy.Check(ctx, opts, con.out)
}

// runMutate runs policy test --mutate: the report goes to stdout (as JSON
// with asJSON, the summary then to stderr), progress to stderr.
func runMutate(ctx context.Context, dir string, opts mutation.Options, asJSON bool, con console) error {
	w := con.out
	if asJSON {
		w = con.log
	}
	rep, err := mutation.Run(ctx, dir, opts, w)
	if asJSON && rep.Mutants != nil {
		enc := json.NewEncoder(con.out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(rep); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err != nil {
		return fmt.Errorf("policy test --mutate: %w", err)
	}
	return nil
}

func runExplain(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("policy explain", `--token-id N --route "METHOD /path" | --action ACTION [--target-id M] [--change JSON] [flags]`,
		`Show the decision the policy makes for a token calling a route, with the facts
it decided on and the conditions that did not hold. The route is a template
("GET /events/{id}") or a request path ("GET /events/12", "/api/v2/events/12"),
which is resolved to the template the server would match; a route the API does
not have is refused.

With --action instead of --route, show the management decision
(data.fleet.manage.decision, docs/design.md §9) for the token making that change: the
target is the account acted on (for account.create the account it is created
under; none for the top), --change the fields asked for, as the API sends them
(grants.replace {"imei": [...]}; token.create the values the new token will
have). A target outside the caller's management scope is reported as the
API's 404, and the policy is asked without it.`)
	cfg := databaseCommand(cmd, getenv)
	cmd.fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "policy set to explain with (FLEET_POLICY_DIR)")
	var tokenID int64
	var route string
	cmd.fs.Int64Var(&tokenID, "token-id", 0, "id of the calling token (see `fleetapi token list`)")
	cmd.fs.StringVar(&route, "route", "", `method and route, e.g. "GET /reports" or "GET /events/12"`)
	var m manageFlags
	cmd.fs.StringVar(&m.action, "action", "", "management action: "+strings.Join(manageActions, ", "))
	cmd.fs.Int64Var(&m.targetID, "target-id", 0, "id of the account acted on (for account.create: the account it is created under)")
	cmd.fs.StringVar(&m.change, "change", "{}", `the fields asked for, a JSON object, e.g. '{"imei": ["356938035643809"]}'`)
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(0, 0); err != nil {
		return err
	}
	if tokenID < 1 {
		return usagef(cmd.name, "policy explain: want --token-id N (a token id of `fleetapi token list`)")
	}
	if m.action != "" {
		if route != "" {
			return usagef(cmd.name, "policy explain: --route and --action exclude each other")
		}
		return explainManagement(ctx, cfg, tokenID, m, con)
	}
	if m.targetID != 0 || m.change != "{}" {
		return usagef(cmd.name, "policy explain: --target-id and --change go with --action")
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
	engine, err := policy.New(ctx, policy.Options{Dir: cfg.PolicyDir, Schema: storage.Schema()})
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

// manageActions are the actions policy explain --action accepts.
var manageActions = []string{policy.ActionAccountCreate, policy.ActionAccountUpdate, policy.ActionAccountErase, policy.ActionGrantsReplace,
	policy.ActionObjectCreate, policy.ActionObjectMove, policy.ActionTokenCreate, policy.ActionTokenRevoke, policy.ActionUsageRead}

// manageFlags are the flags of a management explain.
type manageFlags struct {
	action   string
	targetID int64
	change   string
}

// explainManagement prints the management decision for the token tokenID
// making the change m, with the facts the API would give the policy: the
// caller, its management scope (a target outside it is the API's 404), the
// target with its chain and, for grants.replace, the devices of the
// target's parent among those asked for.
func explainManagement(ctx context.Context, cfg *config, tokenID int64, m manageFlags, con console) error {
	const name = "policy explain"
	if !slices.Contains(manageActions, m.action) {
		return usagef(name, "policy explain: --action %q: want one of %s", m.action, strings.Join(manageActions, ", "))
	}
	if m.targetID < 0 {
		return usagef(name, "policy explain: --target-id %d: want an account id", m.targetID)
	}
	dec := json.NewDecoder(strings.NewReader(m.change))
	dec.UseNumber()
	var change map[string]any
	if err := dec.Decode(&change); err != nil || change == nil || dec.More() {
		return usagef(name, "policy explain: --change %q: want a JSON object", m.change)
	}
	for k, v := range change {
		if n, ok := v.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				return usagef(name, "policy explain: --change: %s: want an integer, not %s", k, n)
			}
			change[k] = i
		}
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 1})
	defer db.Close()
	store := storage.NewStore(db)
	p, err := store.PrincipalByTokenID(ctx, tokenID)
	if err != nil {
		return fmt.Errorf("policy explain: %w", err)
	}
	engine, err := policy.New(ctx, policy.Options{Dir: cfg.PolicyDir, Schema: storage.Schema()})
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	now := time.Now().UTC()
	in := policy.NewManagementInput(p, now, cfg.RateLimit)
	in.Action, in.Change = m.action, change
	fmt.Fprintf(con.out, "token %d (%s) of account %d %q (%s) asking %s\n", p.Token.ID, p.Token.Name,
		p.Account.ID, p.Account.Username, p.Account.Type, m.action)
	if m.targetID > 0 {
		scope, err := engine.ManagementScope(ctx, policy.NewInput(p, "", "", now))
		if err != nil {
			return fmt.Errorf("policy explain: management scope: %w", err)
		}
		a, up, whole, err := store.ManagedAccount(ctx, scope, m.targetID)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			fmt.Fprintf(con.out, "target account %d is not in the caller's management scope (or does not exist): the API answers 404 NOT_FOUND\n", m.targetID)
		case err != nil:
			return fmt.Errorf("policy explain: target: %w", err)
		default:
			in.Target = policy.NewTargetInput(a.Tenancy(), up, whole, now)
			if m.action == policy.ActionGrantsReplace {
				var imei []string
				if list, ok := change["imei"].([]any); ok {
					for _, v := range list {
						if s, ok := v.(string); ok {
							imei = append(imei, s)
						}
					}
				}
				if in.Target.OwnedIMEI, err = store.ParentDevices(ctx, scope, m.targetID, imei); err != nil {
					return fmt.Errorf("policy explain: devices: %w", err)
				}
			}
		}
	}
	x, err := engine.ExplainManagement(ctx, in)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(con.out, x.String())
	return err
}

// runPolicyRoutes is `policy routes`: the module of package fleet.api
// generated from the API's routes, on stdout or, with --write, as
// fleet/api/routes.rego of a policy directory.
func runPolicyRoutes(_ context.Context, args []string, _ func(string) string, con console) error {
	cmd := newCommand("policy routes", "[--write] [DIR]", `Print the Rego module of package fleet.api that fleetapi generates from its
routes (data.fleet.api.routes, read by data.fleet.authz.permissions). With
--write, write it as `+policy.RoutesModule+` of the policy directory DIR
(default policy/rego, the repository's) instead, so that OPA's own tools
(opa test, opa check, opa build) see the routes fleetapi evaluates. fleetapi
itself always evaluates its own routes in place of that file.`)
	write := cmd.fs.Bool("write", false, "write the module into DIR instead of printing it")
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(0, 1); err != nil {
		return err
	}
	if !*write {
		if cmd.fs.NArg() > 0 {
			return usagef(cmd.name, "policy routes: DIR goes with --write")
		}
		_, err := con.out.Write(policy.RoutesSource())
		return err
	}
	dir := cmd.fs.Arg(0)
	if dir == "" {
		dir = filepath.Join("policy", "rego")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("policy routes: %s is not a policy directory", dir)
	}
	path := filepath.Join(dir, filepath.FromSlash(policy.RoutesModule))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("policy routes: %w", err)
	}
	if err := os.WriteFile(path, policy.RoutesSource(), 0o644); err != nil {
		return fmt.Errorf("policy routes: %w", err)
	}
	fmt.Fprintf(con.log, "wrote %s\n", path)
	return nil
}
