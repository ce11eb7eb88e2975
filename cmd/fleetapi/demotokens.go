package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage/demodata"
)

// refuseDemoTokens returns an error naming every token of the database
// that works and whose secret is published in the demo data, with the way
// out: revoking them, or --allow-demo-tokens for a demo database (docs/design.md
// §7). Anyone who has read the README could otherwise call the API with
// them.
func refuseDemoTokens(ctx context.Context, db bun.IDB, dbName string) error {
	toks, err := demodata.ActiveTokens(ctx, db, time.Now())
	if err != nil {
		return fmt.Errorf("checking for demo tokens: %w", err)
	}
	if len(toks) == 0 {
		return nil
	}
	var b strings.Builder
	ids := make([]string, len(toks))
	fmt.Fprintf(&b, "refusing to serve: database %q has %d active demo tokens, whose secrets are published in the demo data (anyone can use them):\n", dbName, len(toks))
	for i, t := range toks {
		fmt.Fprintf(&b, "  token %d %q of account %q\n", t.ID, t.Name, t.Username)
		ids[i] = strconv.FormatInt(t.ID, 10)
	}
	fmt.Fprintf(&b, "revoke them with `fleetapi token revoke %s`, or, for a demo database only, start with --allow-demo-tokens (as `fleetapi dev` does)", strings.Join(ids, " "))
	return errors.New(b.String())
}
