package demodata

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// sets are the accounts and token hashes of the demo data, read from the
// embedded file itself (not from Tokens), so that a secret added to the
// file is recognised however it got there.
type sets struct {
	// accounts maps each demo username to its account type.
	accounts map[string]tenancy.AccountType
	hashes   [][]byte
}

func readSets() (sets, error) {
	f, err := readFile()
	if err != nil {
		return sets{}, err
	}
	s := sets{accounts: f.accountTypes()}
	for _, t := range f.Tokens {
		h, err := tenancy.HashToken(t.Secret)
		if err != nil {
			return sets{}, fmt.Errorf("demo data: token secret: %w", err)
		}
		s.hashes = append(s.hashes, h[:])
	}
	return s, nil
}

// ActiveToken is a token that works and whose secret is published in
// the demo data: anyone who has read the README can use it.
type ActiveToken struct {
	ID       int64
	Username string
	Name     string
}

// ActiveTokens returns, by id, the tokens of db whose secret is one of the
// demo data's public secrets and that still work at now (not revoked, not
// expired), whichever account they belong to. `fleetapi serve` refuses to
// start while there is one (docs/design.md §7). It returns storage.ErrUnavailable
// when the database cannot be reached.
func ActiveTokens(ctx context.Context, db bun.IDB, now time.Time) ([]ActiveToken, error) {
	demo, err := readSets()
	if err != nil {
		return nil, err
	}
	var out []ActiveToken
	err = db.NewSelect().TableExpr("tokens AS t").Join("JOIN accounts AS a ON a.id = t.account_id").
		ColumnExpr("t.id, a.username, t.name").
		Where("t.hash IN (?)", bun.List(demo.hashes)).
		Where("t.revoked_at IS NULL").
		Where("t.expires_at IS NULL OR t.expires_at > ?", now).
		OrderExpr("t.id").
		Scan(ctx, &out)
	if err != nil {
		return nil, storage.Translate(err)
	}
	return out, nil
}

// ForeignAccounts returns the usernames, sorted, of the accounts of db that
// are not in the demo data: a username the demo data does not have, or one it
// has with another account type. A database without the accounts table
// (not migrated yet) has none. `fleetapi dev` refuses a database that has
// any, so that the public demo tokens are never loaded next to real
// accounts (docs/design.md §7). It returns storage.ErrUnavailable when the
// database cannot be reached.
func ForeignAccounts(ctx context.Context, db bun.IDB) ([]string, error) {
	demo, err := readSets()
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := db.NewRaw("SELECT to_regclass('accounts') IS NOT NULL").Scan(ctx, &exists); err != nil {
		return nil, storage.Translate(err)
	}
	if !exists {
		return nil, nil
	}
	var rows []struct {
		Username string              `bun:"username"`
		Type     tenancy.AccountType `bun:"type"`
	}
	if err := db.NewSelect().TableExpr("accounts").Column("username", "type").Scan(ctx, &rows); err != nil {
		return nil, storage.Translate(err)
	}
	var out []string
	for _, r := range rows {
		if typ, ok := demo.accounts[r.Username]; !ok || typ != r.Type {
			out = append(out, r.Username)
		}
	}
	slices.Sort(out)
	return out, nil
}
