package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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

func runToken(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("token: want create, list or revoke")
	}
	action, args := args[0], args[1:]
	cfg, fs, err := databaseCommand("token "+action, getenv, stdout)
	if err != nil {
		return err
	}
	var (
		account, name string
		perms         stringList
		expires       time.Duration
		rateLimit     int
	)
	switch action {
	case "create":
		fs.StringVar(&account, "account", "", "username of the account the token belongs to (required)")
		fs.Var(&perms, "permission", `a permission ("*", "GET *", "GET /services", ...); repeatable`)
		fs.StringVar(&name, "name", "", "token name, unique per account (generated when empty)")
		fs.DurationVar(&expires, "expires", 0, "lifetime, e.g. 720h (no expiry when 0)")
		fs.IntVar(&rateLimit, "rate-limit", 0, "requests per minute for this token (server default when 0)")
	case "list":
		fs.StringVar(&account, "account", "", "username of the account (required)")
	case "revoke":
	default:
		return fmt.Errorf("token: unknown action %q (want create, list or revoke)", action)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	store := storage.NewStore(db)

	switch action {
	case "create":
		if account == "" {
			return errors.New("token create: --account is required")
		}
		if len(perms) == 0 {
			return errors.New("token create: at least one --permission is required")
		}
		nt := storage.NewToken{Username: account, Name: name, Permissions: perms, RateLimit: rateLimit}
		if expires > 0 {
			at := time.Now().Add(expires).UTC()
			nt.ExpiresAt = &at
		}
		secret, tok, err := store.CreateToken(ctx, nt)
		if err != nil {
			return fmt.Errorf("token create: %w", err)
		}
		fmt.Fprintf(stdout, "token %d %q for %s (shown once, store it now):\n%s\n", tok.ID, tok.Name, account, secret)
	case "list":
		if account == "" {
			return errors.New("token list: --account is required")
		}
		toks, err := store.ListTokens(ctx, account)
		if err != nil {
			return fmt.Errorf("token list: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPERMISSIONS\tEXPIRES\tREVOKED\tLAST USED\tRATE LIMIT")
		for _, t := range toks {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, strings.Join(t.Permissions, ","),
				timeOrDash(t.ExpiresAt), timeOrDash(t.RevokedAt), timeOrDash(t.LastUsedAt), intOrDash(t.RateLimit))
		}
		return tw.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			return errors.New("token revoke: want exactly one token ID")
		}
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || id < 1 {
			return fmt.Errorf("token revoke: %q is not a token ID", fs.Arg(0))
		}
		if err := store.RevokeToken(ctx, id); err != nil {
			return fmt.Errorf("token revoke: %w", err)
		}
		fmt.Fprintf(stdout, "token %d revoked\n", id)
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
