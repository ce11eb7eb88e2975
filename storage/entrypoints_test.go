package storage_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// unscopedStore are the exported methods of *Store that take no
// policy.Scope, each with the reason it may: none of them reads or writes
// a tenant table (services, reports, events, passengers, objects) on a
// caller's behalf.
var unscopedStore = map[string]string{
	"Ping":                    "SELECT 1: no table",
	"AccountByUsername":       "accounts, for the CLI (token create/list): not a tenant table",
	"PrincipalByTokenHash":    "tokens and accounts: authentication, before any scope exists",
	"PrincipalByTokenID":      "tokens and accounts: the CLI's policy explain",
	"TouchToken":              "tokens: last use of the authenticated token",
	"CreateToken":             "tokens: the CLI",
	"ListTokens":              "tokens: the CLI",
	"RevokeToken":             "tokens: the CLI",
	"EraseAccount":            "every table of a subtree: the CLI's tenant erase, a trusted operator job (the API's erase is EraseManagedAccount, scoped)",
	"WithReplicas":            "routing configuration: no table",
	"ScopesTranslated":        "a counter of the Store's scope translations, in memory: no table",
	"ActivePrincipals":        "tokens and accounts: policy diff's callers (a trusted CLI job), before any scope exists",
	"AccountPrincipals":       "accounts: policy diff's accounts (a trusted CLI job), whose scopes it then compiles",
	"AccountQuotas":           "quota use of an account the management scope already returned (GET/PATCH /accounts/{id})",
	"QuotasOf":                "accounts: the calling principal's own account, for the policy's input",
	"DefaultQuotas":           "configuration: no table",
	"WithQuotas":              "configuration: no table",
	"WithShapesOff":           "configuration (the paging shapes' A/B): no table",
	"ClaimDelivery":           "webhook_deliveries of every account: the sender's claim (a server job on no caller's behalf); what it sends is read through the owner's scope (Claim.Notification)",
	"NewWebhookID":            "the webhooks id sequence only: reserves an id, reads and returns no row",
	"EventZonesMissing":       "zones of the account of an event rule read in the caller's scope (GET /events/{id}): returns only which of the rule's zone names are not that account's zones, no row",
	"Deliveries":              "webhook_deliveries of every account: the sender's queue counts, returns counts only",
	"InsertNotificationOf":    "test only (export_test): a notification through insertNotifications",
	"AddUsage":                "usage_daily: the servers' own counts of what they answered (metering), not a tenant table",
	"ExportUsage":             "usage_daily and accounts: the operator's billing export (a trusted CLI job)",
	"FoldCounters":            "account_row_counts only: moves counts between an account's own stripes, reads and returns no row",
	"Purge":                   "idempotency_keys and tokens past their lifetime, every account's: serve's periodic purge, returns counts only",
	"SweepSilence":            "objects, events, notifications of every account: the clock's connection_no rules (a server job under its lease, on no caller's behalf), returns counts only",
	"SweepServiceDays":        "objects, services, service_states, notifications of every account: the clock's services due by the day (a server job under its lease), returns counts only",
	"TryLease":                "fleet_leases: a background job's lease, not a tenant table",
	"ReleaseLease":            "fleet_leases: a background job's lease, not a tenant table",
	"NotificationStreamStart": "pg_current_snapshot(): no table (a stream's starting position)",
	"OpenStreamSlot":          "notification_streams of the calling principal's own account (the stream limit), after the route's decision",
	"RenewStreamSlot":         "notification_streams: the lease of the caller's own stream slot, by the id OpenStreamSlot returned",
	"CloseStreamSlot":         "notification_streams: frees the caller's own stream slot, by the id OpenStreamSlot returned",
	"MaintainPositions":       "positions partitions and notifications past the retention, every account's: serve's maintenance, returns counts only",
}

// unscopedFuncs are the exported functions of package storage that take a
// database handle (*Store, bun.IDB, *bun.DB, bun.Tx) but no policy.Scope,
// each with the reason it may.
var unscopedFuncs = map[string]string{
	"NewStore":           "wraps a handle; every query goes through its methods",
	"Migrator":           "schema migrations: no rows",
	"Migrate":            "schema migrations: no rows",
	"WithMigrationLock":  "schema migrations: an advisory lock, no rows",
	"NewReplicas":        "replica health checks: WAL positions, no table",
	"SuspendRowCounting": "generate's bulk load (a trusted job): disables the counting triggers in its own transaction",
	"ResumeRowCounting":  "generate's bulk load (a trusted job): recounts every account's rows, as the migration's backfill does",
	"TryLease":           "fleet_leases: a background job's lease, not a tenant table",
	"ReleaseLease":       "fleet_leases: a background job's lease, not a tenant table",
}

var scopeType = reflect.TypeFor[policy.Scope]()

// TestTenantEntryPointsTakeAScope enumerates every exported method of
// *Store (reflection) and every exported function of package storage that
// takes a database handle (go/parser over the package's files), and proves
// that each takes a policy.Scope, or is on the commented allow-list above.
// A new entry point that reads a tenant table without a scope fails here,
// and so does an allow-list entry that no longer exists or takes a scope.
func TestTenantEntryPointsTakeAScope(t *testing.T) {
	seen := map[string]bool{}
	st := reflect.TypeFor[*storage.Store]()
	for i := range st.NumMethod() {
		m := st.Method(i)
		seen[m.Name] = true
		scoped := false
		for j := range m.Type.NumIn() {
			scoped = scoped || m.Type.In(j) == scopeType
		}
		if _, allowed := unscopedStore[m.Name]; scoped == allowed {
			t.Errorf("(*Store).%s: takes a policy.Scope %t, on the allow-list %t", m.Name, scoped, allowed)
		}
	}
	for name := range unscopedStore {
		if !seen[name] {
			t.Errorf("allow-list names (*Store).%s, which does not exist", name)
		}
	}

	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	handles := map[string]bool{"*Store": true, "Lister": true, "bun.IDB": true, "*bun.DB": true, "bun.Tx": true}
	var funcs []string
	found := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() {
				continue
			}
			handle, scoped := false, false
			for _, p := range fd.Type.Params.List {
				typ := exprString(p.Type)
				handle = handle || handles[typ]
				scoped = scoped || typ == "policy.Scope"
			}
			if !handle {
				continue
			}
			funcs = append(funcs, fd.Name.Name)
			found[fd.Name.Name] = true
			if _, allowed := unscopedFuncs[fd.Name.Name]; scoped == allowed {
				t.Errorf("func %s: takes a policy.Scope %t, on the allow-list %t", fd.Name.Name, scoped, allowed)
			}
		}
	}
	for name := range unscopedFuncs {
		if !found[name] {
			t.Errorf("allow-list names func %s, which does not exist or takes no handle", name)
		}
	}
	sort.Strings(funcs)
	if !found["List"] {
		t.Errorf("the parser found no func List among %v: the enumeration is broken", funcs)
	}
}

// exprString renders a parameter type: Store, *Store, bun.IDB, policy.Scope.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.IndexExpr:
		return exprString(e.X)
	}
	return ""
}
