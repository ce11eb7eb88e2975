package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runTokenCreate(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("token create", "--account USER [--permission P...] [flags]",
		`Create a token for an account and print its secret on standard output (only the
SHA-256 hash is stored: the secret is shown this once). A permission is "*",
"METHOD *" or "METHOD /route" with a route template of the API, such as
"GET /services" or "GET /events/{id}"; one that matches no route is refused.
Without --permission the token reads only /me, as POST /tokens with
"permissions": [] (one validation for both).`)
	cfg := databaseCommand(cmd, getenv)
	var (
		account, name string
		perms         stringList
		expires       time.Duration
		rateLimit     int
	)
	cmd.fs.StringVar(&account, "account", "", "username of the account the token belongs to (required)")
	cmd.fs.Var(&perms, "permission", `a permission ("*", "GET *", "GET /services", ...); repeatable`)
	cmd.fs.StringVar(&name, "name", "", "token name, unique per account (generated when empty)")
	cmd.fs.DurationVar(&expires, "expires", 0, "lifetime, e.g. 720h (no expiry when 0)")
	cmd.fs.IntVar(&rateLimit, "rate-limit", 0, "requests per minute for this token (server default when 0)")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	switch {
	case account == "":
		return usagef(cmd.name, "token create: --account is required")
	case expires < 0:
		return usagef(cmd.name, "token create: --expires must not be negative")
	}
	nt := storage.NewToken{Username: account, Name: name, Permissions: append([]string{}, perms...), RateLimit: rateLimit}
	if expires > 0 {
		at := time.Now().Add(expires).UTC()
		nt.ExpiresAt = &at
	}
	// The one validation of a new token, POST /tokens's (storage.ValidateNewToken):
	// no --permission is the empty list, a token that reads only /me, as
	// "permissions": [] is through the API.
	if err := storage.ValidateNewToken(nt.Permissions, nt.ExpiresAt, nt.RateLimit, time.Now()); err != nil {
		return usagef(cmd.name, "token create: %s", strings.TrimPrefix(err.Error(), storage.ErrInvalid.Error()+": "))
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	secret, tok, err := storage.NewStore(db).CreateToken(ctx, nt)
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	fmt.Fprintf(con.log, "token %d %q for %s (shown once, store it now):\n", tok.ID, tok.Name, account)
	_, err = fmt.Fprintln(con.out, secret)
	return err
}

func runTokenList(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("token list", "--account USER [flags]", "List the tokens of an account, revoked and expired ones included, oldest first. Secrets are never shown (they are not stored).")
	cfg := databaseCommand(cmd, getenv)
	var account string
	cmd.fs.StringVar(&account, "account", "", "username of the account (required)")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	if account == "" {
		return usagef(cmd.name, "token list: --account is required")
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	toks, err := storage.NewStore(db).ListTokens(ctx, account)
	if err != nil {
		return fmt.Errorf("token list: %w", err)
	}
	tw := tabwriter.NewWriter(con.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tPERMISSIONS\tEXPIRES\tREVOKED\tLAST USED\tRATE LIMIT\tMINTED BY")
	for _, t := range toks {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, strings.Join(t.Permissions, ","),
			timeOrDash(t.ExpiresAt), timeOrDash(t.RevokedAt), timeOrDash(t.LastUsedAt), intOrDash(t.RateLimit), intOrDash(int(t.ParentID)))
	}
	return tw.Flush()
}

func runTokenRevoke(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("token revoke", "[flags] ID...", "Revoke the tokens with these ids (see `fleetapi token list`), and every token minted from them, transitively: they stop working at once. Revoking a revoked token again changes nothing.")
	cfg := databaseCommand(cmd, getenv)
	if err := cmd.parseArgs(args, con, 1, -1); err != nil {
		return err
	}
	ids := make([]int64, cmd.fs.NArg())
	for i, a := range cmd.fs.Args() {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id < 1 {
			return usagef(cmd.name, "token revoke: %q is not a token ID", a)
		}
		ids[i] = id
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	store := storage.NewStore(db)
	for _, id := range ids {
		if err := store.RevokeToken(ctx, id); err != nil {
			return fmt.Errorf("token revoke: %w", err)
		}
		fmt.Fprintf(con.out, "token %d revoked\n", id)
	}
	return nil
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func intOrDash(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}
