package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/tenancy"
)

// MaxAncestors is the most accounts there can be above an account: the
// tree has fixed levels (docs/design.md §2: subaccount → user → manager → admin),
// which the database enforces (migration 20261220000001) as do the import
// and the policy.
const MaxAncestors = 3

// ancestorsColumn is the select-list expression that loads the accounts
// above the token's account ("account", joined by Relation), nearest
// first, as one JSON array: a recursive walk up manager_id that stops
// after MaxAncestors+1 accounts (one more than the fixed levels allow, so
// that a deeper chain is seen to be one) or at an account it has already
// visited. It runs in the same statement as the token lookup, so that
// authentication stays one round trip. wholeChain judges the result.
var ancestorsColumn = fmt.Sprintf(`(
	WITH RECURSIVE up AS (
		SELECT m.id, m.username, m.type, m.manager_id, m.active, m.read_only, m.account_expire, m.account_expire_dt, m.rate_limit,
			1 AS depth, ARRAY["account"."id", m.id] AS path
		FROM accounts AS m WHERE m.id = "account"."manager_id"
		UNION ALL
		SELECT m.id, m.username, m.type, m.manager_id, m.active, m.read_only, m.account_expire, m.account_expire_dt, m.rate_limit,
			up.depth + 1, up.path || m.id
		FROM up JOIN accounts AS m ON m.id = up.manager_id
		WHERE up.depth <= %d AND m.id <> ALL (up.path)
	)
	SELECT COALESCE(json_agg(json_build_object(
		'id', id, 'username', username, 'type', type, 'manager_id', manager_id, 'active', active,
		'read_only', read_only, 'account_expire', account_expire, 'account_expire_dt', account_expire_dt, 'rate_limit', rate_limit
	) ORDER BY depth), '[]') FROM up
) AS "ancestors"`, MaxAncestors)

// mintersColumn is the select-list expression that loads the tokens that
// minted the token ("t"), nearest first, as one JSON array: a recursive
// walk up parent_token_id that stops after tenancy.MaxTokenGeneration+1
// tokens or at a token it has already visited (wholeMinters judges it).
var mintersColumn = fmt.Sprintf(`(
	WITH RECURSIVE up AS (
		SELECT p.id, p.account_id, p.rate_limit, p.parent_token_id, 1 AS depth, ARRAY["t"."id", p.id] AS path
		FROM tokens AS p WHERE p.id = "t"."parent_token_id"
		UNION ALL
		SELECT p.id, p.account_id, p.rate_limit, p.parent_token_id, up.depth + 1, up.path || p.id
		FROM up JOIN tokens AS p ON p.id = up.parent_token_id
		WHERE up.depth <= %d AND p.id <> ALL (up.path)
	)
	SELECT COALESCE(json_agg(json_build_object('id', id, 'account_id', account_id, 'rate_limit', rate_limit, 'parent_token_id', parent_token_id)
		ORDER BY depth), '[]') FROM up
) AS "minters"`, tenancy.MaxTokenGeneration)

// principalRow is a token with its account, the accounts above it and the
// tokens that minted it.
type principalRow struct {
	Token     `bun:",extend"`
	Ancestors ancestorList `bun:"ancestors,scanonly"`
	Minters   minterList   `bun:"minters,scanonly"`
}

// principalQuery selects principal rows: the token, its account (joined),
// the account's ancestors (ancestorsColumn) and the token's minters
// (mintersColumn), in one statement.
func (s *Store) principalQuery(row *principalRow) *bun.SelectQuery {
	return s.db.NewSelect().Model(row).ColumnExpr("t.*").ColumnExpr(ancestorsColumn).ColumnExpr(mintersColumn).Relation("Account")
}

// minter is one token of mintersColumn.
type minter struct {
	ID            int64  `json:"id"`
	AccountID     int64  `json:"account_id"`
	RateLimit     *int   `json:"rate_limit"`
	ParentTokenID *int64 `json:"parent_token_id"`
}

// minterList is the JSON array of mintersColumn (implements sql.Scanner).
type minterList []minter

// Scan reads the json column; NULL scans as no minters.
func (l *minterList) Scan(src any) error {
	return scanJSON(l, src, "storage.minterList")
}

// wholeMinters reports whether up, the tokens loaded above a token whose
// parent is parentID (nil: none), is its whole lineage: each token the
// parent of the one below it, the last made by an operator (no parent), at
// most tenancy.MaxTokenGeneration. A loop or a deeper lineage (written
// behind the API's back) is not whole.
func wholeMinters(parentID *int64, up minterList) bool {
	return wholeLine(parentID, up, tenancy.MaxTokenGeneration, func(m minter) (int64, *int64) { return m.ID, m.ParentTokenID })
}

// principal returns the row as the tenancy package sees it; a chain of
// ancestors that is not whole is marked (tenancy.Principal.AncestorsIncomplete).
func (r principalRow) principal() tenancy.Principal {
	p := tenancy.Principal{Token: r.Token.Tenancy(), Account: r.Account.Tenancy(),
		AncestorsIncomplete: !wholeChain(r.Account.ManagerID, r.Ancestors),
		MintersIncomplete:   !wholeMinters(r.Token.ParentTokenID, r.Minters)}
	for _, m := range r.Minters {
		p.Minters = append(p.Minters, tenancy.Minter{ID: m.ID, AccountID: m.AccountID, RateLimit: orZero(m.RateLimit)})
	}
	if len(r.Ancestors) > 0 {
		p.Ancestors = make([]tenancy.Account, len(r.Ancestors))
		for i, a := range r.Ancestors {
			p.Ancestors[i] = a.Tenancy()
		}
	}
	return p
}

// wholeChain reports whether up, the accounts loaded above an account
// whose manager is managerID (nil: none), is the whole chain to the top of
// the tree within the fixed levels: each account is the manager of the one
// below it, the last has no manager, and there are at most MaxAncestors.
// A missing row, a loop of manager_id links (the walk stops at an account
// it has visited) and a chain deeper than the fixed levels are each not
// whole: the policy then denies (docs/design.md §2, fail closed), and the chain
// never looks shorter than it is.
func wholeChain(managerID *int64, up ancestorList) bool {
	return wholeLine(managerID, up, MaxAncestors, func(a ancestor) (int64, *int64) { return a.ID, a.ManagerID })
}

// wholeLine reports whether up, the rows loaded above a row that links to
// start (nil: to none), is the whole line above it: each row the one the
// row below it links to, the last linking to none, at most most rows.
// link returns a row's id and the id it links to.
func wholeLine[T any](start *int64, up []T, most int, link func(T) (id int64, next *int64)) bool {
	if len(up) > most {
		return false
	}
	next := start
	for _, r := range up {
		id, above := link(r)
		if next == nil || *next != id {
			return false
		}
		next = above
	}
	return next == nil
}

// ancestorList is the JSON array of ancestorsColumn (implements
// sql.Scanner).
type ancestorList []ancestor

// ancestor is one account of ancestorsColumn.
type ancestor struct {
	ID              int64               `json:"id"`
	Username        string              `json:"username"`
	Type            tenancy.AccountType `json:"type"`
	ManagerID       *int64              `json:"manager_id"`
	Active          bool                `json:"active"`
	ReadOnly        bool                `json:"read_only"`
	AccountExpire   bool                `json:"account_expire"`
	AccountExpireDt *Date               `json:"account_expire_dt"`
	RateLimit       *int                `json:"rate_limit"`
}

// Scan reads the json column; NULL scans as no ancestors.
func (l *ancestorList) Scan(src any) error {
	return scanJSON(l, src, "storage.ancestorList")
}

// Tenancy returns the ancestor as the tenancy package sees it.
func (a ancestor) Tenancy() tenancy.Account {
	return Account{
		ID: a.ID, Username: a.Username, Type: a.Type, ManagerID: a.ManagerID, Active: a.Active,
		ReadOnly: a.ReadOnly, AccountExpire: a.AccountExpire, AccountExpireDt: a.AccountExpireDt,
		RateLimit: a.RateLimit,
	}.Tenancy()
}

// PrincipalByTokenID returns the token with the given id, its account and
// the account's ancestors, whatever the token's state (for `fleetapi policy
// explain`). It returns ErrNotFound when there is none and ErrUnavailable
// when the database cannot be reached.
func (s *Store) PrincipalByTokenID(ctx context.Context, id int64) (tenancy.Principal, error) {
	row := new(principalRow)
	if err := s.principalQuery(row).Where("t.id = ?", id).Scan(ctx); err != nil {
		if err = Translate(err); errors.Is(err, ErrNotFound) {
			return tenancy.Principal{}, worded(ErrNotFound, err, "token %d not found", id)
		}
		return tenancy.Principal{}, err
	}
	return row.principal(), nil
}
