package storage

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

// DiffExamples is how many example ids RowDelta holds at most.
const DiffExamples = 5

// RowDelta is one direction of a change of row scope: how many rows of the
// resource one scope admits and the other does not, and the first
// DiffExamples of their ids, ascending.
type RowDelta struct {
	Count    int64   `json:"count"`
	Examples []int64 `json:"examples"`
}

// ScopeTables lists the resources DiffScopes accepts and the table whose
// rows each one's ids are: the tenant resources (Resources) and the
// management scope (policy.ManagementResource, the accounts table).
func ScopeTables() map[policy.Resource]string {
	out := map[policy.Resource]string{accountsScope.resource: accountsScope.table}
	for _, d := range registry {
		out[d.resource] = d.table
	}
	return out
}

// DiffScopes compares two compiled scopes of the same resource on the
// rows of its table (the accounts table for the management scope): added
// holds the rows next admits and prev does not, removed the rows prev
// admits and next does not. Both scopes are translated as the API's
// queries translate them (compiledFor), so that the SQL compared is
// exactly the SQL the API would run; the conditions are rendered once
// each, as the list queries render them, and combined in one statement per
// direction:
//
//	SELECT count(*), (array_agg(id ORDER BY id))[1:5] FROM t WHERE (next) IS TRUE AND (prev) IS NOT TRUE
//
// Two scopes whose SQL and arguments are the same admit the same rows
// whatever the data: no statement runs then. A scope that storage cannot
// translate, or scopes of different resources, are policy.ErrScope.
func (s *Store) DiffScopes(ctx context.Context, prev, next policy.Scope) (added, removed RowDelta, err error) {
	if prev.Resource() != next.Resource() {
		return RowDelta{}, RowDelta{}, fmt.Errorf("%w: scopes of %q and %q compared", policy.ErrScope, prev.Resource(), next.Resource())
	}
	d := scopeDescriptor(prev.Resource())
	if d == nil {
		return RowDelta{}, RowDelta{}, fmt.Errorf("%w: unknown resource %q", policy.ErrScope, prev.Resource())
	}
	p, err := s.compiledFor(prev, d)
	if err != nil {
		return RowDelta{}, RowDelta{}, err
	}
	n, err := s.compiledFor(next, d)
	if err != nil {
		return RowDelta{}, RowDelta{}, err
	}
	added, removed = RowDelta{Examples: []int64{}}, RowDelta{Examples: []int64{}}
	if p.page.sql == n.page.sql && reflect.DeepEqual(p.page.args, n.page.args) {
		return added, removed, nil
	}
	if added, err = s.rowsOnlyIn(ctx, d, n.page, p.page); err != nil {
		return RowDelta{}, RowDelta{}, err
	}
	if removed, err = s.rowsOnlyIn(ctx, d, p.page, n.page); err != nil {
		return RowDelta{}, RowDelta{}, err
	}
	return added, removed, nil
}

// rowsOnlyIn counts the rows of d's table that in admits and out does
// not. A condition that is NULL for a row does not admit it (as in a
// WHERE clause), hence IS TRUE and IS NOT TRUE.
func (s *Store) rowsOnlyIn(ctx context.Context, d *Descriptor, in, out sqlFragment) (RowDelta, error) {
	args := make([]any, 0, len(in.args)+len(out.args))
	args = append(args, in.args...)
	args = append(args, out.args...)
	var delta RowDelta
	var ids []int64
	id := d.col(d.id.Name)
	err := s.db.NewSelect().
		TableExpr(`? AS ?`, bun.Ident(d.table), bun.Ident(d.alias)).
		ColumnExpr(`count(*)`).
		ColumnExpr(fmt.Sprintf(`COALESCE((array_agg(%s ORDER BY %s))[1:%d], '{}')`, id, id, DiffExamples)).
		Where(`(`+in.sql+`) IS TRUE AND (`+out.sql+`) IS NOT TRUE`, args...).
		Scan(ctx, &delta.Count, pgdialect.Array(&ids))
	if err != nil {
		return RowDelta{}, Translate(err)
	}
	delta.Examples = ids
	if delta.Examples == nil {
		delta.Examples = []int64{}
	}
	return delta, nil
}

// ActivePrincipals returns every token that can authenticate at now (not
// revoked, not expired) with its account and the accounts above it, as
// authentication loads them, in token id order: the callers whose
// decisions `fleetapi policy diff` compares.
func (s *Store) ActivePrincipals(ctx context.Context, now time.Time) ([]tenancy.Principal, error) {
	var rows []principalRow
	err := s.db.NewSelect().Model(&rows).ColumnExpr("t.*").ColumnExpr(ancestorsColumn).ColumnExpr(mintersColumn).Relation("Account").
		Where("t.revoked_at IS NULL").
		Where("t.expires_at IS NULL OR t.expires_at > ?", now).
		OrderExpr("t.id").Scan(ctx)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]tenancy.Principal, len(rows))
	for i, r := range rows {
		out[i] = r.principal()
	}
	return out, nil
}

// accountRow is an account with the accounts above it (ancestorsColumn).
type accountRow struct {
	Account   `bun:",extend"`
	Ancestors ancestorList `bun:"ancestors,scanonly"`
}

// AccountPrincipals returns every account with the accounts above it, as a
// principal without a token, in id order: the accounts whose row scopes
// `fleetapi policy diff` compares (a scope depends on the account alone).
func (s *Store) AccountPrincipals(ctx context.Context) ([]tenancy.Principal, error) {
	var rows []accountRow
	err := s.db.NewSelect().Model(&rows).ModelTableExpr(`"accounts" AS "account"`).ColumnExpr(`"account".*`).ColumnExpr(ancestorsColumn).
		OrderExpr(`"account"."id"`).Scan(ctx)
	if err != nil {
		return nil, Translate(err)
	}
	out := make([]tenancy.Principal, len(rows))
	for i, r := range rows {
		p := principalRow{Ancestors: r.Ancestors}
		p.Account = &r.Account
		out[i] = p.principal()
		out[i].Token = tenancy.Token{}
	}
	return out, nil
}
