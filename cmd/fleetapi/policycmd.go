package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

func runPolicy(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("policy: want test, check or explain")
	}
	action, args := args[0], args[1:]
	switch action {
	case "test":
		fs := newFlagSet("policy test", stdout)
		if err := fs.Parse(args); err != nil {
			return err
		}
		_, err := policy.RunTests(ctx, fs.Arg(0), stdout)
		return err
	case "check":
		fs := newFlagSet("policy check", stdout)
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return errors.New("policy check: want exactly one DIR")
		}
		return policy.Check(ctx, policy.Options{Dir: fs.Arg(0), Resources: storage.Resources(), CompileScope: storage.CompileScope}, stdout)
	case "explain":
		return runExplain(ctx, args, getenv, stdout)
	}
	return fmt.Errorf("policy: unknown action %q (want test, check or explain)", action)
}

func runExplain(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, fs, err := databaseCommand("policy explain", getenv, stdout)
	if err != nil {
		return err
	}
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "policy set to explain with (FLEET_POLICY_DIR)")
	var tokenID int64
	var route string
	fs.Int64Var(&tokenID, "token-id", 0, "id of the calling token (see `fleetapi token list`)")
	fs.StringVar(&route, "route", "", `method and route template, e.g. "GET /reports"`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	method, path, ok := strings.Cut(strings.TrimSpace(route), " ")
	if tokenID < 1 || !ok || !strings.HasPrefix(path, "/") {
		return errors.New(`policy explain: want --token-id N and --route "METHOD /route"`)
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 1})
	defer db.Close()
	p, err := storage.NewStore(db).PrincipalByTokenID(ctx, tokenID)
	if err != nil {
		return fmt.Errorf("policy explain: token %d: %w", tokenID, err)
	}
	engine, err := policy.New(ctx, policy.Options{Dir: cfg.PolicyDir, Resources: storage.Resources(), CompileScope: storage.CompileScope})
	if err != nil {
		return err
	}
	in := policy.NewInput(p, strings.ToUpper(method), path, time.Now().UTC())
	x, err := engine.Explain(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "token %d (%s) of account %d %q (%s) calling %s %s\n", p.Token.ID, p.Token.Name,
		p.Account.ID, p.Account.Username, p.Account.Type, strings.ToUpper(method), path)
	_, err = fmt.Fprintln(stdout, x.String())
	return err
}
