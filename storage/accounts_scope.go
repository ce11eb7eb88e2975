package storage

import (
	"context"
	"fmt"
	"reflect"

	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
)

// accountsScope is the descriptor of the accounts table as the management
// scope (policy.ManagementResource, data.fleet.manage.accounts) sees it.
// It is not a listed tenant resource (Descriptors, Resources): accounts
// carry no account_id, so its scope columns are its own: the real columns
// id, manager_id and type, and the virtual grand_manager_id (the manager
// of the account's manager). compileScope translates the management scope
// with it.
var accountsScope = describeAccounts()

// Accounts is the list of managed accounts (GET /accounts, docs/design.md §9):
// the accounts table under the management scope. It is not a tenant
// resource (Descriptors, Resources).
var Accounts = Model[Account]{accountsScope}

// describeAccounts derives the accounts descriptor from the Account model
// and sets its scope whitelist. A model it cannot describe panics while
// the package initialises, as declare does.
func describeAccounts() *Descriptor {
	d, err := describe(pgdialect.New().Tables().Get(reflect.TypeFor[Account]()))
	if err != nil {
		panic(fmt.Sprintf("storage: describe accounts: %v", err))
	}
	d.resource = policy.ManagementResource
	d.scope = map[string]columnKind{
		"id":               kindInt,
		"manager_id":       kindInt,
		"type":             kindText,
		"grand_manager_id": kindGrandManager,
	}
	return d
}

// scopeDescriptor returns the descriptor a scope of resource is translated
// with: a tenant resource's, or accountsScope for the management scope;
// nil for anything else.
func scopeDescriptor(resource policy.Resource) *Descriptor {
	if resource == accountsScope.resource {
		return accountsScope
	}
	return descriptorOf(resource)
}

// ManagedAccounts returns, among the accounts with the given ids, the ids
// of those in the management scope (policy.Engine.ManagementScope), in
// ascending order. A management write checks its target (and a new
// account's manager) with it before it asks the policy: an id it does not
// return is 404. A scope of another resource, or one storage cannot
// translate, is policy.ErrScope.
func (s *Store) ManagedAccounts(ctx context.Context, scope policy.Scope, ids ...int64) ([]int64, error) {
	q, err := s.scopedSelect(scope, accountsScope, (*Account)(nil))
	if err != nil {
		return nil, err
	}
	id := accountsScope.col("id")
	out := []int64{}
	if len(ids) == 0 {
		return out, nil
	}
	err = q.Column("id").Where(id+" = ANY(?)", pgdialect.Array(ids)).OrderExpr(id).Scan(ctx, &out)
	if err != nil {
		return nil, Translate(err)
	}
	return out, nil
}

// scopedByAccounts describes the table of T as a list restricted by the
// management scope through its account-id column col: a row is visible
// when col names an account the caller manages. Its resource is the
// management scope's, so its queries take that Scope; it is not a tenant
// resource (Descriptors, Resources). A model it cannot describe panics
// while the package initialises, as declare does.
func scopedByAccounts[T any](col string) *Descriptor {
	d, err := describe(pgdialect.New().Tables().Get(reflect.TypeFor[T]()))
	if err != nil {
		panic(fmt.Sprintf("storage: describe %s: %v", reflect.TypeFor[T](), err))
	}
	if _, ok := d.Field(col); !ok {
		if f := d.tableField(col); !f {
			panic(fmt.Sprintf("storage: %s has no column %s", d.table, col))
		}
	}
	d.resource = policy.ManagementResource
	d.scope = map[string]columnKind{}
	d.scopedBy = col
	return d
}

// tableField reports whether the model of d has the column name.
func (d *Descriptor) tableField(name string) bool {
	_, ok := pgdialect.New().Tables().Get(d.model).FieldMap[name]
	return ok
}

// scopeOwner is the descriptor whose compiled scope restricts d's rows: d
// itself, or accountsScope for a table scoped through an account column.
func (d *Descriptor) scopeOwner() *Descriptor {
	if d.scopedBy != "" {
		return accountsScope
	}
	return d
}

// scopedWhere is the WHERE fragment of d's rows for the compiled fragment
// f of its scope owner: f itself, or for a table scoped through an account
// column, that column IN the accounts f admits.
func (d *Descriptor) scopedWhere(f sqlFragment) (string, []any) {
	if d.scopedBy == "" || f.sql == "TRUE" || f.sql == "FALSE" {
		return f.sql, f.args
	}
	a := accountsScope
	in := d.col(d.scopedBy) + ` IN (SELECT ` + a.col("id") + ` FROM "` + a.table + `" AS "` + a.alias + `" WHERE ` + f.sql + `)`
	if d.goneVia == "" {
		return in, f.args
	}
	return `(` + in + ` OR (NOT EXISTS (SELECT 1 FROM "` + a.table + `" AS "gone" WHERE "gone"."id" = ` + d.col(d.scopedBy) + `)` +
			` AND EXISTS (SELECT 1 FROM "` + a.table + `" AS "` + a.alias + `" WHERE ` + a.col("id") + ` = ANY(` + d.col(d.goneVia) + `) AND ` + f.sql + `)))`,
		append(append([]any{}, f.args...), f.args...)
}

// outlivingAccounts makes d's rows outlive their account (usage, billing
// data): a row whose account no longer exists (erased) is visible when one
// of the accounts in its column col (the ancestors recorded with it) is in
// the management scope. It returns d.
func (d *Descriptor) outlivingAccounts(col string) *Descriptor {
	if !d.tableField(col) {
		panic(fmt.Sprintf("storage: %s has no column %s", d.table, col))
	}
	d.goneVia = col
	return d
}
