package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tooling/policydiff"
)

// exitWidens is the exit status of `policy diff` when NEW grants anything
// OLD did not (docs/design.md §10): a CI gate for "this change widens access".
const exitWidens = 3

func runPolicyDiff(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("policy diff", "[--database-url U] [--json] OLD NEW",
		`Compare the policy set NEW with OLD (directories, or bundle files where the
policy loader takes them) before deploying it. Both sets are checked as serve
checks them (compile, their own tests, every scope translatable to SQL); a set
that fails is an error (exit 1).

With --database-url (or FLEET_DATABASE_URL, which backs it as for every
command; set it empty for a synthetic run), every token that can authenticate is asked every route
under both sets, and every account's row scope of every resource (and its
management scope over accounts) is compared in SQL: the rows NEW admits and OLD
does not, and the reverse, with counts and up to 5 example ids. Without it,
synthetic principals are used: every account type with every privilege set
(none, exactly one, both), in every state the policy reads (inactive, expired,
read-only, each account above inactive, expired or read-only), with the tokens
"*", "METHOD *", the route alone and none, and their scopes are compared on a
grid of synthetic rows.

Exit status 3 when NEW grants anything OLD did not (a decision denied by OLD
and allowed by NEW, or a row admitted by NEW and not by OLD); 0 otherwise,
also when NEW only narrows access; 1 on failure; 2 for a usage mistake.`)
	dbURL := strings.TrimSpace(getenv("FLEET_DATABASE_URL"))
	var asJSON bool
	cmd.fs.Var(databaseURLValue{&dbURL}, "database-url", "compare on the tokens, accounts and rows of this database, read only (FLEET_DATABASE_URL; synthetic principals when neither is set)")
	cmd.fs.BoolVar(&asJSON, "json", false, "write the report as one JSON document")
	if err := cmd.parse(args, con); err != nil {
		return err
	}
	if err := cmd.args(2, 2); err != nil {
		return err
	}
	if cmd.set("database-url") && strings.TrimSpace(dbURL) == "" {
		// An unset shell variable must not turn a database run into a
		// synthetic one without a word.
		return usagef(cmd.name, "%s: --database-url is empty (leave the flag out to compare synthetic principals)", cmd.name)
	}
	oldPath, newPath := cmd.fs.Arg(0), cmd.fs.Arg(1)
	oldE, err := diffEngine(ctx, "OLD", oldPath)
	if err != nil {
		return err
	}
	newE, err := diffEngine(ctx, "NEW", newPath)
	if err != nil {
		return err
	}
	opts := policydiff.Options{Old: oldE, New: newE, OldPath: oldPath, NewPath: newPath, Now: time.Now().UTC()}
	if dbURL != "" {
		db := storage.Open(dbURL, storage.Options{MaxOpenConns: max(2, runtime.GOMAXPROCS(0))})
		defer db.Close()
		opts.Store = storage.NewStore(db)
	}
	rep, err := policydiff.Compare(ctx, opts)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(con.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := rep.Write(con.out); err != nil {
		return err
	}
	if rep.Widens {
		return &statusError{code: exitWidens, err: errors.New("policy diff: NEW grants access that OLD does not")}
	}
	return nil
}

// diffEngine loads, compiles and checks one policy set as serve does (its
// own tests, every scope rule translatable by storage) without a cache or
// a decision log: the one way policy diff turns a path into a policy set.
func diffEngine(ctx context.Context, which, path string) (*policy.Engine, error) {
	e, err := policy.New(ctx, policy.Options{
		Dir: path, Schema: storage.Schema(), CacheSize: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("policy diff: %s %s: %w", which, path, err)
	}
	return e, nil
}
