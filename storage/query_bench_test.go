package storage

import (
	"context"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/tenancy"
)

// benchScopes returns the services scope the real policy compiles for a
// principal of each account type.
func benchScopes(b *testing.B) map[string]policy.Scope {
	b.Helper()
	ctx := context.Background()
	e, err := policy.New(ctx, policy.Options{Schema: Schema()})
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]policy.Scope{}
	for _, typ := range []tenancy.AccountType{tenancy.Admin, tenancy.Manager, tenancy.User, tenancy.Subaccount} {
		p := tenancy.Principal{
			Token:   tenancy.Token{ID: 1, Permissions: []string{"*"}},
			Account: tenancy.Account{ID: 70, Type: typ, ManagerID: 3, Active: true, Privileges: []string{"reports", "event_notifications"}},
		}
		rs, err := e.Scope(ctx, policy.NewInput(p, "GET", "/services", time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)), "services")
		if err != nil {
			b.Fatal(err)
		}
		out[string(typ)] = rs
	}
	return out
}

// BenchmarkScopeSQL: translating a compiled row scope into its WHERE
// fragments (page and count, compileScope), per account type.
func BenchmarkScopeSQL(b *testing.B) {
	scopes := benchScopes(b)
	for _, typ := range []string{"admin", "manager", "user", "subaccount"} {
		b.Run(typ, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := compileScope(scopes[typ]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuildListQuery: building the page query of GET /services (scope,
// filters, search, order, limit) and rendering its SQL, without running it.
func BenchmarkBuildListQuery(b *testing.B) {
	scopes := benchScopes(b)
	db := Open("postgres://bench@127.0.0.1:1/bench?sslmode=disable", Options{})
	b.Cleanup(func() { db.Close() })
	s := NewStore(db)
	l := Services.Descriptor
	field := func(name string) Field { f, _ := l.Field(name); return f }
	for _, tc := range []struct {
		name string
		typ  string
		req  ListRequest
	}{
		{"user_page", "user", ListRequest{Page: 1, PerPage: 50, Sort: field("service_id")}},
		{"manager_page_100", "manager", ListRequest{Page: 100, PerPage: 50, Sort: field("service_id")}},
		{"admin_search", "admin", ListRequest{Page: 1, PerPage: 50, Sort: field("service_id"), Search: "tachograph"}},
		{"subaccount_filtered", "subaccount", ListRequest{Page: 1, PerPage: 50, Sort: field("name"), Filters: []Filter{{Field: field("odo"), Value: true}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var items []Service
				q, err := s.scopedSelect(scopes[tc.typ], l, &items)
				if err != nil {
					b.Fatal(err)
				}
				if err := applyFilters(q, l, tc.req); err != nil {
					b.Fatal(err)
				}
				q.OrderExpr(l.col(tc.req.Sort.Name) + " ASC").Limit(int64(tc.req.PerPage)).Offset(int64(tc.req.Page-1) * int64(tc.req.PerPage))
				if len(q.String()) == 0 {
					b.Fatal("empty query")
				}
			}
		})
	}
}
