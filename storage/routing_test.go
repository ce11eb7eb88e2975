package storage_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// replicaReads are the entry points that may read a replica (through
// Store.read), each with the routes that use it: the reads of the client
// API. Every other entry point runs on the primary.
var replicaReads = map[string]string{
	"List":              "GET /services, /reports, /events, /passengers, /objects (a list under the management scope runs on the primary)",
	"EventByID":         "GET /events/{id}",
	"DueServices":       "GET /services/due",
	"NotificationByID":  "GET /notifications/{id}",
	"ObjectByID":        "GET /objects/{id}: the device's state may lag the newest reading by the replica's delay",
	"WebhookByID":       "GET /webhooks/{id}",
	"WebhookDeliveries": "GET /webhooks/{id}/deliveries",
	"ZoneByID":          "GET /zones/{id}",
	"EventZonesMissing": "GET /events/{id}: whether the rule's zones are zones of its account",
}

// primaryFirstReads are the entry points that read the primary and, only
// while it cannot be reached (a fail-over, docs/design.md §13), a usable replica,
// through Store.readPrimaryFirst, each with why.
var primaryFirstReads = map[string]string{
	"PrincipalByTokenHash": "authentication: a token revoked or created a moment ago is seen on the primary; without a primary, reads a standby can serve keep working",
}

// primaryOnly are the entry points that run on the primary, each with why:
// a write, a read inside a write transaction, an idempotency look-up,
// authentication, or a read whose answer must include the caller's own
// writes (the management routes, the CLI).
var primaryOnly = map[string]string{
	"Ping":                     "readiness of the primary",
	"AccountByUsername":        "the CLI",
	"PrincipalByTokenID":       "the CLI's policy explain",
	"TouchToken":               "a write",
	"CreateToken":              "a write (the CLI)",
	"ListTokens":               "the CLI, after its own writes",
	"RevokeToken":              "a write (the CLI)",
	"EraseAccount":             "a write (the CLI's tenant erase)",
	"EraseManagedAccount":      "a management write (DELETE /accounts/{id})",
	"WithReplicas":             "configuration",
	"ScopesTranslated":         "a counter in memory: no query",
	"AccountQuotas":            "a management read: the use a quota check just counted",
	"QuotasOf":                 "a management read: the caller's own limits, before its write",
	"DefaultQuotas":            "configuration",
	"WithQuotas":               "configuration",
	"WithShapesOff":            "configuration",
	"FoldCounters":             "a write (serve's periodic fold of the counters' stripes)",
	"Purge":                    "a write (serve's periodic purge of expired keys and dead tokens)",
	"SweepSilence":             "writes (the clock's connection_no: notifications and rule state under the device's lock)",
	"SweepServiceDays":         "writes (the clock's services due by the day: service_states and notifications under the devices' locks)",
	"TryLease":                 "a write (the lease of a background job)",
	"ReleaseLease":             "a write (the lease of a background job)",
	"ActivePrincipals":         "policy diff (the CLI): the tokens as they are now",
	"AccountPrincipals":        "policy diff (the CLI): the accounts as they are now",
	"DiffScopes":               "policy diff (the CLI): compares two scopes over the primary's rows",
	"CountedTotal":             "a test export: the counters' differential test compares them with count(*) on one database",
	"CreatePassenger":          "a write with its idempotency look-up, in one transaction",
	"CreateAccount":            "a management write",
	"UpdateAccount":            "a management write",
	"CreateObject":             "a management write",
	"CreateManagedToken":       "a management write",
	"RevokeManagedToken":       "a management write",
	"ReplaceGrants":            "a management write",
	"MoveObject":               "a management write",
	"ManagedObject":            "the target check of PATCH /objects/{id}",
	"ManageInTx":               "reads inside a management write transaction",
	"ManagedAccount":           "GET /accounts/{id}: the management routes read what the manager just wrote",
	"ManagedAccounts":          "the target check of a management write",
	"ManagedTokenByID":         "GET /tokens/{id}: a token just revoked shows revoked",
	"GrantedObjects":           "GET /accounts/{id}/objects, after PUT",
	"ParentDevices":            "the check of PUT /accounts/{id}/objects",
	"ScopedIDs":                "a test's export (export_test.go)",
	"DueReference":             "a test's export (due_reference_export_test.go): the former due computation, the differential test's reference",
	"DueSQL":                   "a test's export (due_reference_export_test.go): renders the due statement, runs nothing",
	"ScopeCounts":              "a test's export (count_export_test.go)",
	"AddUsage":                 "a write (the metering flush)",
	"ClaimDelivery":            "a write (the sender's attempt transaction)",
	"CreateWebhook":            "a write (POST /webhooks)",
	"CreateEvent":              "a write (POST /events)",
	"UpdateEvent":              "a write (PATCH /events/{id})",
	"DeleteEvent":              "a write (DELETE /events/{id})",
	"CreateService":            "a write (POST /services)",
	"UpdateService":            "a write (PATCH /services/{id})",
	"DeleteService":            "a write (DELETE /services/{id})",
	"ServiceDone":              "a write (POST /services/{id}/done)",
	"CreateReport":             "a write (POST /reports)",
	"UpdateReport":             "a write (PATCH /reports/{id})",
	"DeleteReport":             "a write (DELETE /reports/{id})",
	"DeleteWebhook":            "a write (DELETE /webhooks/{id})",
	"NewWebhookID":             "a write (reserves a webhook id from the sequence)",
	"RetryDelivery":            "a write (POST /webhooks/{id}/deliveries/{delivery_id}/retry)",
	"RotateWebhookSecret":      "a write (POST /webhooks/{id}/rotate-secret)",
	"TestWebhook":              "a write (POST /webhooks/{id}/test)",
	"UpdateWebhook":            "a write (PATCH /webhooks/{id})",
	"CreateZone":               "a write (POST /zones)",
	"UpdateZone":               "a write (PATCH /zones/{id})",
	"DeleteZone":               "a write (DELETE /zones/{id})",
	"Deliveries":               "the sender's queue: its idle sleep and metrics, on the primary it claims from",
	"InsertNotificationOf":     "test only (export_test): a write",
	"UsageTotals":              "GET /usage: a management read, like GET /accounts",
	"ExportUsage":              "the CLI's billing export",
	"NotificationStreamStart":  "a stream's position: the primary's transactions order the stream (xid, pg_current_snapshot)",
	"NotificationStreamCursor": "a stream's position (Last-Event-ID): the primary's transactions order the stream",
	"NotificationsAfter":       "a stream's reads: only the primary's snapshot tells which transactions are still running (no gap)",
	"OpenStreamSlot":           "a write (the stream limit's slot, in its transaction)",
	"RenewStreamSlot":          "a write (the stream slot's lease)",
	"CloseStreamSlot":          "a write (frees the stream slot)",
	"IngestReadings":           "a write (POST /readings: the batch's one transaction)",
	"MaintainPositions":        "a write (serve's positions maintenance under its lease)",
	"Positions":                "GET /objects/{id}/positions: a gateway reads back what it just posted (a replica read may follow)",
}

// TestReadRouting enumerates the entry points (every exported method of
// *Store, and List) and every path to a replica in the package's source,
// and proves that only the entry points of replicaReads reach one, each
// through Store.read, and that every other entry point is on primaryOnly
// with its reason. The paths to a replica are the replica chooser and the
// replica handles: Replicas.read (which picks a replica and runs the read
// on it), Replicas.pick and Replicas.dbs, and the Store's replicas field
// that leads to them. Matched syntactically on every selector, whatever
// the call's arity or whether it is called at all (a method value counts):
// only Store.read may use Store.replicas to reach Replicas.read (and
// WithReplicas to set it), only methods of *Replicas may touch pick and
// dbs, and Store.read may be used only by the replica reads. The function
// given to read may not write: no Insert, Update, Delete, transaction or
// Exec inside it. A new entry point fails here until it is classified; a
// write path or a management read cannot reach a replica without one of
// these selectors, which this test confines (issue 25 item 2: a
// ManagedAccount calling s.replicas.read directly fails here).
func TestReadRouting(t *testing.T) {
	st := reflect.TypeFor[*storage.Store]()
	entry := []string{"List"}
	for i := range st.NumMethod() {
		entry = append(entry, st.Method(i).Name)
	}
	for _, name := range entry {
		_, r := replicaReads[name]
		_, p := primaryOnly[name]
		_, f := primaryFirstReads[name]
		if n := btoi(r) + btoi(p) + btoi(f); n != 1 {
			t.Errorf("entry point %s: on replicaReads %v, on primaryOnly %v, on primaryFirstReads %v: classify it in exactly one", name, r, p, f)
		}
	}
	for name := range primaryOnly {
		if !slices.Contains(entry, name) {
			t.Errorf("primaryOnly names %s, which is not an entry point", name)
		}
	}

	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var callers, firstCallers []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn := funcName(fd)
			// Calls of Store.read with their function literal, to check
			// that it writes nothing.
			calls := map[*ast.SelectorExpr]*ast.CallExpr{}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						calls[sel] = call
					}
				}
				return true
			})
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				at := fset.Position(sel.Pos())
				switch sel.Sel.Name {
				case "readPrimaryFirst":
					if fn == "Store.readPrimaryFirst" {
						return true
					}
					firstCallers = append(firstCallers, fd.Name.Name)
					if call, ok := calls[sel]; !ok {
						t.Errorf("%s: uses Store.readPrimaryFirst without calling it (%s)", fn, at)
					} else if lit, ok := call.Args[len(call.Args)-1].(*ast.FuncLit); ok {
						noWrites(t, fset, fn, lit)
					} else {
						t.Errorf("%s: readPrimaryFirst is given %T, not a function literal this test can check", fn, call.Args[len(call.Args)-1])
					}
				case "fallback":
					if fn != "Store.readPrimaryFirst" && !strings.HasPrefix(fn, "Replicas.") {
						t.Errorf("%s uses Replicas.fallback (%s): only Store.readPrimaryFirst may", fn, at)
					}
				case "replicas":
					if fn != "Store.read" && fn != "Store.WithReplicas" && fn != "Store.readPrimaryFirst" {
						t.Errorf("%s uses Store.replicas (%s): only Store.read may reach the replica set", fn, at)
					}
				case "pick", "dbs":
					if !strings.HasPrefix(fn, "Replicas.") {
						t.Errorf("%s uses Replicas.%s (%s): only the replica set's own methods may choose or hold a replica", fn, sel.Sel.Name, at)
					}
				case "read":
					if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "replicas" {
						// Store.read handing over to Replicas.read; any other
						// user of Store.replicas is reported above.
						return true
					}
					if strings.HasPrefix(fn, "Replicas.") {
						return true // the replica set's own methods
					}
					callers = append(callers, fd.Name.Name)
					call, ok := calls[sel]
					if !ok {
						t.Errorf("%s: uses Store.read without calling it (%s): a method value this test cannot follow", fn, at)
						return true
					}
					if lit, ok := call.Args[len(call.Args)-1].(*ast.FuncLit); ok {
						noWrites(t, fset, fn, lit)
					} else {
						t.Errorf("%s: read is given %T, not a function literal this test can check", fn, call.Args[len(call.Args)-1])
					}
				}
				return true
			})
		}
	}
	sort.Strings(callers)
	want := make([]string, 0, len(replicaReads))
	for name := range replicaReads {
		want = append(want, name)
	}
	sort.Strings(want)
	if !slices.Equal(callers, want) {
		t.Errorf("functions that call Store.read: %v, want %v", callers, want)
	}
	sort.Strings(firstCallers)
	wantFirst := make([]string, 0, len(primaryFirstReads))
	for name := range primaryFirstReads {
		wantFirst = append(wantFirst, name)
	}
	sort.Strings(wantFirst)
	if !slices.Equal(firstCallers, wantFirst) {
		t.Errorf("functions that call Store.readPrimaryFirst: %v, want %v", firstCallers, wantFirst)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// funcName is a function's name, or Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// noWrites fails when the function literal given to read calls a method
// that writes or opens a transaction.
func noWrites(t *testing.T, fset *token.FileSet, caller string, lit *ast.FuncLit) {
	t.Helper()
	writes := map[string]bool{"NewInsert": true, "NewUpdate": true, "NewDelete": true, "NewMerge": true, "RunInTx": true,
		"BeginTx": true, "Begin": true, "ExecContext": true, "Exec": true, "NewCreateTable": true, "NewTruncateTable": true}
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && writes[sel.Sel.Name] {
			t.Errorf("%s: the read it runs on a replica calls %s (%s)", caller, sel.Sel.Name, fset.Position(sel.Pos()))
		}
		return true
	})
}
