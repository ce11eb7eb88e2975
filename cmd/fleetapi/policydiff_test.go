package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tooling/policydiff"
)

// diffExtra adds subaccounts with every privilege set (none, exactly one,
// both; one inactive) and reports and events naming granted, ungranted
// and no devices to the demo data, so that a change of the privilege rules
// has several rows and tokens to show.
const diffExtra = `{
  "accounts": [
    {"username": "globex-none", "email": "n@globex.example", "type": "subaccount", "manager": "globex", "privileges": [], "objects": ["861073032104551", "861073032104569"]},
    {"username": "globex-both", "email": "b@globex.example", "type": "subaccount", "manager": "globex", "privileges": ["reports", "event_notifications"], "objects": ["861073032104551"]},
    {"username": "globex-off", "email": "o@globex.example", "type": "subaccount", "manager": "globex", "active": false, "privileges": [], "objects": ["861073032104551"]},
    {"username": "acme-none", "email": "n@acme.example", "type": "subaccount", "manager": "acme", "privileges": [], "objects": ["356938035643809", "356938035643817"]}
  ],
  "tokens": [
    {"account": "globex-none", "name": "all", "secret": "flt_diffGlobexNone000000000000000000", "permissions": ["*"]},
    {"account": "globex-none", "name": "services", "secret": "flt_diffGlobexNoneServices0000000000", "permissions": ["GET /services"]},
    {"account": "globex-none", "name": "reports", "secret": "flt_diffGlobexNoneReports00000000000", "permissions": ["GET /reports"]},
    {"account": "globex-both", "name": "all", "secret": "flt_diffGlobexBoth000000000000000000", "permissions": ["*"]},
    {"account": "globex-off", "name": "all", "secret": "flt_diffGlobexOff0000000000000000000", "permissions": ["*"]},
    {"account": "acme-none", "name": "get", "secret": "flt_diffAcmeNone00000000000000000000", "permissions": ["GET *"]}
  ],
  "reports": [
    {"account": "globex", "name": "Both reefers", "type": "general", "imei": ["861073032104551", "861073032104569"]},
    {"account": "globex", "name": "Fleet summary", "type": "general", "imei": []},
    {"account": "acme", "name": "Truck 7 and 8", "type": "general", "imei": ["356938035643809", "356938035643817"]}
  ],
  "events": [
    {"account": "globex", "name": "Second reefer door", "type": "door", "imei": ["861073032104569"]}
  ]
}`

// diffWorld is the data of a test database, read with plain SQL, from
// which the tests work out what a policy change must show, independently
// of the scope translator.
type diffWorld struct {
	accounts map[int64]storage.Account
	grants   map[int64][]string
	tokens   []storage.Token
	// rows[resource] are the rows of a tenant table: id, owner, devices.
	rows map[string][]worldRowOf
}

type worldRowOf struct {
	id        int64
	accountID int64
	imei      []string
}

func loadDiffWorld(t *testing.T, db *storagetest.DB) diffWorld {
	t.Helper()
	ctx := context.Background()
	w := diffWorld{accounts: map[int64]storage.Account{}, grants: map[int64][]string{}, rows: map[string][]worldRowOf{}}
	var accts []storage.Account
	if err := db.NewSelect().Model(&accts).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range accts {
		w.accounts[a.ID] = a
	}
	rows, err := db.QueryContext(ctx, `SELECT subaccount_id, imei FROM object_grants`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var imei string
		if err := rows.Scan(&id, &imei); err != nil {
			t.Fatal(err)
		}
		w.grants[id] = append(w.grants[id], imei)
	}
	rows.Close()
	if err := db.NewSelect().Model(&w.tokens).Order("id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range storage.Descriptors() {
		imei := "'{}'::text[]"
		switch d.Table() {
		case "services", "objects":
			imei = "ARRAY[imei]"
		case "reports", "events":
			imei = "imei"
		}
		rs, err := db.QueryContext(ctx, `SELECT `+d.ID().Name+`, account_id, `+imei+` FROM `+d.Table()+` ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var r worldRowOf
			if err := rs.Scan(&r.id, &r.accountID, pgdialect.Array(&r.imei)); err != nil {
				t.Fatal(err)
			}
			w.rows[string(d.Resource())] = append(w.rows[string(d.Resource())], r)
		}
		rs.Close()
		if len(w.rows[string(d.Resource())]) == 0 {
			t.Fatalf("no %s rows in the test data", d.Resource())
		}
	}
	return w
}

// usable: the account itself is active and not expired (the scope rules).
func (w diffWorld) usable(a storage.Account) bool {
	return a.Active && !a.Tenancy().Expired(time.Now().UTC())
}

// chainUsable: the account and every account above it but admins are
// usable (the decision rules).
func (w diffWorld) chainUsable(a storage.Account) bool {
	if !w.usable(a) {
		return false
	}
	for m := a.ManagerID; m != nil; m = w.accounts[*m].ManagerID {
		if up := w.accounts[*m]; up.Type != "admin" && !w.usable(up) {
			return false
		}
	}
	return true
}

func (w diffWorld) granted(sub int64, imei []string) bool {
	for _, i := range imei {
		if !slices.Contains(w.grants[sub], i) {
			return false
		}
	}
	return true
}

// diffJSON runs policy diff --json and returns its exit status and report.
func diffJSON(t *testing.T, args ...string) (int, policydiff.Report, map[string]any) {
	t.Helper()
	var out, errOut syncBuffer
	code := mainWith(context.Background(), append([]string{"policy", "diff", "--json"}, args...), envOf(nil), &out, &errOut)
	var rep policydiff.Report
	var raw map[string]any
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	_ = json.Unmarshal([]byte(out.String()), &raw)
	return code, rep, raw
}

// editPolicy replaces old by new in file of the policy set dir, once.
func editPolicy(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropRegoTest removes the test rule name from file of dir: the tests a
// policy author changes along with the rule.
func dropRegoTest(t *testing.T, dir, file, name string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+name+" if {\n")
	if i < 0 {
		t.Fatalf("%s has no test %s", file, name)
	}
	j := strings.Index(s[i:], "\n}\n")
	if err := os.WriteFile(p, []byte(s[:i]+s[i+j+2:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reportsWithoutPrivilege is the policy set that lets subaccounts use GET
// /reports and see their granted reports without the reports privilege.
func reportsWithoutPrivilege(t *testing.T) string {
	dir := copyRego(t)
	editPolicy(t, dir, "fleet/authz/authz.rego", "\t\"GET /reports\": \"reports\",\n", "")
	editPolicy(t, dir, "fleet/scope/scope.rego", "reports if {\n\tholds(\"reports\")\n\tgranted(input.reports)\n}", "reports if granted(input.reports)")
	dropRegoTest(t, dir, "fleet/authz/authz_test.rego", "test_privilege_beats_read_only")
	dropRegoTest(t, dir, "fleet/authz/authz_test.rego", "test_privilege_required")
	dropRegoTest(t, dir, "fleet/scope/scope_test.rego", "test_subaccount_exactly_one_privilege")
	dropRegoTest(t, dir, "fleet/scope/scope_test.rego", "test_subaccount_needs_privilege")
	return dir
}

func diffDatabase(t *testing.T) (*storagetest.DB, diffWorld) {
	t.Helper()
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	extra := filepath.Join(t.TempDir(), "extra.json")
	if err := os.WriteFile(extra, []byte(diffExtra), 0o600); err != nil {
		t.Fatal(err)
	}
	runOK(t, env, "import", extra)
	return db, loadDiffWorld(t, db)
}

// TestPolicyDiffPrivilegeWidening: NEW lets subaccounts use GET /reports
// and see their granted reports without the privilege. Against a
// database, policy diff exits 3 and names exactly the tokens whose
// decision opens (worked out here from the data: active tokens of usable
// subaccounts without the privilege whose permissions cover the route)
// and, per subaccount, exactly the reports that open (its parent's
// reports whose every device is granted to it); the same diff the other
// way round is a narrowing: exit 0, the same tokens and rows as removed.
// The JSON document has the documented shape.
func TestPolicyDiffPrivilegeWidening(t *testing.T) {
	db, w := diffDatabase(t)
	old, wide := copyRego(t), reportsWithoutPrivilege(t)

	var wantTokens []int64
	for _, tok := range w.tokens {
		a := w.accounts[tok.AccountID]
		if tok.RevokedAt != nil || tok.ExpiresAt != nil && tok.ExpiresAt.Before(time.Now()) ||
			a.Type != "subaccount" || slices.Contains(a.Privileges, "reports") || !w.chainUsable(a) {
			continue
		}
		if slices.ContainsFunc(tok.Permissions, func(p string) bool { return p == "*" || p == "GET *" || p == "GET /reports" }) {
			wantTokens = append(wantTokens, tok.ID)
		}
	}
	wantRows := map[int64][]int64{}
	for _, a := range w.accounts {
		if a.Type != "subaccount" || slices.Contains(a.Privileges, "reports") || !w.usable(a) {
			continue
		}
		for _, r := range w.rows["reports"] {
			if r.accountID == *a.ManagerID && w.granted(a.ID, r.imei) {
				wantRows[a.ID] = append(wantRows[a.ID], r.id)
			}
		}
	}
	if len(wantTokens) < 3 || len(wantRows) < 3 {
		t.Fatalf("the test data should open several tokens and subaccounts: %v, %v", wantTokens, wantRows)
	}

	for _, dir := range []string{"widen", "narrow"} {
		args := []string{"--database-url", db.URL, old, wide}
		if dir == "narrow" {
			args = []string{"--database-url", db.URL, wide, old}
		}
		code, rep, raw := diffJSON(t, args...)
		wantCode, wantOld, wantNew := exitWidens, "PRIVILEGE_REQUIRED", "ALLOW"
		if dir == "narrow" {
			wantCode, wantOld, wantNew = 0, "ALLOW", "PRIVILEGE_REQUIRED"
		}
		if code != wantCode || rep.Widens != (dir == "widen") || rep.Mode != "database" {
			t.Fatalf("%s: exit %d widens %v mode %s, want %d", dir, code, rep.Widens, rep.Mode, wantCode)
		}
		if len(rep.Decisions) != 1 {
			t.Fatalf("%s: want one group of changed decisions, got %+v", dir, rep.Decisions)
		}
		d := rep.Decisions[0]
		var gotTokens []int64
		for _, e := range d.Examples {
			gotTokens = append(gotTokens, e.TokenID)
		}
		if d.Route != "GET /reports" || d.AccountType != "subaccount" || d.Old != wantOld || d.New != wantNew ||
			d.Widens != (dir == "widen") || d.Count != len(wantTokens) || !slices.Equal(gotTokens, wantTokens[:min(5, len(wantTokens))]) {
			t.Fatalf("%s: decisions %+v, want tokens %v", dir, d, wantTokens)
		}
		got := map[int64][]int64{}
		for _, r := range rep.Rows {
			delta, other := r.Added, r.Removed
			if dir == "narrow" {
				delta, other = r.Removed, r.Added
			}
			if r.Resource != "reports" || other.Count != 0 || r.AccountType != "subaccount" {
				t.Fatalf("%s: unexpected row change %+v", dir, r)
			}
			var ids []int64
			for _, e := range delta.Examples {
				ids = append(ids, int64(e.(float64)))
			}
			if int(delta.Count) != len(wantRows[r.AccountID]) || !slices.Equal(ids, wantRows[r.AccountID][:min(5, len(wantRows[r.AccountID]))]) {
				t.Fatalf("%s: account %d: %+v, want %v", dir, r.AccountID, delta, wantRows[r.AccountID])
			}
			got[r.AccountID] = ids
		}
		if len(got) != len(wantRows) {
			t.Fatalf("%s: rows changed for %v, want %v", dir, got, wantRows)
		}
		if dir == "widen" {
			checkDiffJSONShape(t, raw)
		}
	}

	// the table for people
	var out, errOut syncBuffer
	code := mainWith(context.Background(), []string{"policy", "diff", "--database-url", db.URL, old, wide}, envOf(nil), &out, &errOut)
	s := out.String()
	if code != exitWidens || !strings.Contains(s, "GET /reports") || !strings.Contains(s, "PRIVILEGE_REQUIRED") ||
		!strings.Contains(s, "WIDENS") || !strings.Contains(s, "verdict: NEW grants access that OLD does not") {
		t.Fatalf("exit %d:\n%s\n%s", code, s, errOut.String())
	}
	t.Logf("policy diff output:\n%s", s)
}

// checkDiffJSONShape pins the documented JSON document of policy diff
// (docs/policy.md): its keys and those of a decision group and a row
// change.
func checkDiffJSONShape(t *testing.T, raw map[string]any) {
	t.Helper()
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	want := []string{"compared", "decisions", "mode", "new", "not_compared", "old", "rows", "widens"}
	if got := keys(raw); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	if got := keys(raw["old"].(map[string]any)); !slices.Equal(got, []string{"path", "revision"}) {
		t.Fatalf("old: %v", got)
	}
	if got := keys(raw["compared"].(map[string]any)); !slices.Equal(got, []string{"accounts", "callers", "decisions", "resources", "routes"}) {
		t.Fatalf("compared: %v", got)
	}
	d := raw["decisions"].([]any)[0].(map[string]any)
	if got := keys(d); !slices.Equal(got, []string{"account_type", "count", "examples", "new", "old", "route", "widens"}) {
		t.Fatalf("decision: %v", got)
	}
	if got := keys(d["examples"].([]any)[0].(map[string]any)); !slices.Equal(got, []string{"account_id", "token_id", "username"}) {
		t.Fatalf("decision example: %v", got)
	}
	r := raw["rows"].([]any)[0].(map[string]any)
	if got := keys(r); !slices.Equal(got, []string{"account_id", "account_type", "added", "removed", "resource", "username"}) {
		t.Fatalf("row: %v", got)
	}
	if got := keys(r["added"].(map[string]any)); !slices.Equal(got, []string{"count", "examples"}) {
		t.Fatalf("row delta: %v", got)
	}
}

// TestPolicyDiffSiblingsWidening: NEW lets a user see the rows of the
// other accounts of its manager. policy diff exits 3 and, for every
// usable user and every tenant resource, names exactly the rows of its
// siblings (worked out here from the data); no decision and no
// management scope changes.
func TestPolicyDiffSiblingsWidening(t *testing.T) {
	db, w := diffDatabase(t)
	old, wide := copyRego(t), copyRego(t)
	editPolicy(t, wide, "fleet/scope/scope.rego", "# granted(row):", `visible(row) if {
	usable
	input.account.type == "user"
	row.manager_id == input.account.manager_id
}

# granted(row):`)
	want := map[string][]int64{}
	for _, u := range w.accounts {
		if u.Type != "user" || !w.usable(u) || u.ManagerID == nil {
			continue
		}
		for res, rows := range w.rows {
			if res == "webhooks" {
				continue // owned, not visible: its scope rule does not read visible() (scope.rego)
			}
			for _, r := range rows {
				owner := w.accounts[r.accountID]
				if r.accountID != u.ID && owner.ManagerID != nil && *owner.ManagerID == *u.ManagerID {
					k := res + "/" + u.Username
					want[k] = append(want[k], r.id)
				}
			}
		}
	}
	code, rep, _ := diffJSON(t, "--database-url", db.URL, old, wide)
	if code != exitWidens || !rep.Widens || len(rep.Decisions) != 0 {
		t.Fatalf("exit %d, widens %v, decisions %+v", code, rep.Widens, rep.Decisions)
	}
	got := map[string][]int64{}
	for _, r := range rep.Rows {
		a := w.accounts[r.AccountID]
		k := r.Resource + "/" + a.Username
		if r.Removed.Count != 0 || r.Resource == "accounts" {
			t.Fatalf("unexpected change %+v", r)
		}
		var ids []int64
		for _, e := range r.Added.Examples {
			ids = append(ids, int64(e.(float64)))
		}
		if int(r.Added.Count) != len(want[k]) || !slices.Equal(ids, want[k][:min(5, len(want[k]))]) {
			t.Fatalf("%s: %+v, want %v", k, r.Added, want[k])
		}
		got[k] = ids
	}
	if len(got) != len(want) || len(want) < 10 {
		t.Fatalf("changed %v, want %v", got, want)
	}
}

// TestPolicyDiffIdentical: two copies of the same set, with a database
// and without, show no changes and exit 0.
func TestPolicyDiffIdentical(t *testing.T) {
	db, _ := diffDatabase(t)
	a, b := copyRego(t), copyRego(t)
	for _, args := range [][]string{{"--database-url", db.URL, a, b}, {a, b}} {
		code, rep, _ := diffJSON(t, args...)
		if code != 0 || rep.Widens || len(rep.Decisions) != 0 || len(rep.Rows) != 0 || rep.Compared.Decisions == 0 || rep.Compared.Accounts == 0 {
			t.Fatalf("%v: exit %d %+v", args, code, rep)
		}
		var out, errOut syncBuffer
		if code := mainWith(context.Background(), append([]string{"policy", "diff"}, args...), envOf(nil), &out, &errOut); code != 0 || !strings.Contains(out.String(), "no changes") {
			t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
		}
	}
}

// TestPolicyDiffSynthetic: without a database, the privilege widening is
// found on the synthetic principals: exactly the usable subaccounts
// without the reports privilege (2 privilege sets: none, and
// event_notifications alone), in each state that leaves them usable for a
// GET (as they are; read-only; each of the 3 accounts above read-only;
// the admin at the top inactive or expired, which passes nothing down: 7
// states), with each token that covers the route ("*", "GET *", "GET
// /reports": 3) = 42 decisions; and their granted report rows (of their
// parent 7, granted to them, 9) open. Exit 3.
func TestPolicyDiffSynthetic(t *testing.T) {
	old, wide := copyRego(t), reportsWithoutPrivilege(t)
	code, rep, _ := diffJSON(t, old, wide)
	if code != exitWidens || rep.Mode != "synthetic" || len(rep.Decisions) != 1 {
		t.Fatalf("exit %d %s %+v", code, rep.Mode, rep.Decisions)
	}
	d := rep.Decisions[0]
	if d.Route != "GET /reports" || d.Old != "PRIVILEGE_REQUIRED" || d.New != "ALLOW" || d.Count != 42 || !d.Widens {
		t.Fatalf("%+v", d)
	}
	for _, e := range d.Examples {
		if !strings.HasPrefix(e.Principal, "subaccount 9 [") || strings.Contains(e.Principal, "reports") {
			t.Fatalf("example %+v", e)
		}
	}
	if len(rep.Rows) == 0 {
		t.Fatal("no row changes")
	}
	for _, r := range rep.Rows {
		if r.Resource != "reports" || r.AccountID != 9 || r.Removed.Count != 0 || r.Added.Count == 0 {
			t.Fatalf("row change %+v", r)
		}
		for _, e := range r.Added.Examples {
			row := e.(map[string]any)
			if row["account_id"] != float64(7) || row["granted_to"] != float64(9) {
				t.Fatalf("added row %v", row)
			}
		}
	}
	// and the narrowing way round is exit 0
	if code, rep, _ := diffJSON(t, wide, old); code != 0 || rep.Widens || len(rep.Decisions) != 1 || len(rep.Rows) == 0 {
		t.Fatalf("narrowing: exit %d %+v", code, rep)
	}
}

// TestPolicyDiffRefusesBrokenSet: a set that fails its own tests, or does
// not compile, is an error naming the set and the reason (exit 1), not a
// diff; a missing argument is a usage error (exit 2).
func TestPolicyDiffRefusesBrokenSet(t *testing.T) {
	good := copyRego(t)
	failing := copyRego(t)
	editPolicy(t, failing, "fleet/authz/authz.rego", "\t\"GET /reports\": \"reports\",\n", "")
	broken := copyRego(t)
	editPolicy(t, broken, "fleet/scope/scope.rego", "services if unrestricted", "services if unrestricted(")
	for _, c := range []struct {
		dir, want string
	}{{failing, "test_privilege_required"}, {broken, "scope.rego"}} {
		var out, errOut syncBuffer
		code := mainWith(context.Background(), []string{"policy", "diff", good, c.dir}, envOf(nil), &out, &errOut)
		if code != exitFailure || !strings.Contains(errOut.String(), "NEW "+c.dir) || !strings.Contains(errOut.String(), c.want) {
			t.Fatalf("exit %d:\n%s", code, errOut.String())
		}
	}
	var out, errOut syncBuffer
	if code := mainWith(context.Background(), []string{"policy", "diff", good}, envOf(nil), &out, &errOut); code != exitUsage {
		t.Fatalf("one argument: exit %d", code)
	}
	// An empty --database-url (an unset shell variable) is a usage
	// mistake, not a quiet switch to synthetic principals.
	for _, empty := range []string{"", " "} {
		errOut = syncBuffer{}
		if code := mainWith(context.Background(), []string{"policy", "diff", "--database-url", empty, good, good}, envOf(nil), &out, &errOut); code != exitUsage || !strings.Contains(errOut.String(), "--database-url is empty") {
			t.Fatalf("--database-url %q: exit %d:\n%s", empty, code, errOut.String())
		}
	}
}

// bundleOf writes the .rego files of the policy set dir as an OPA bundle
// file with OPA's bundle writer (the format of `opa build -b`).
func bundleOf(t *testing.T, dir, revision string) string {
	t.Helper()
	b := bundle.Bundle{Manifest: bundle.Manifest{Revision: revision, Roots: &[]string{"fleet"}}, Data: map[string]any{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".rego" {
			return err
		}
		src, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: "/" + rel, Path: "/" + rel, Raw: src})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := bundle.Write(&buf, b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), revision+".tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyDiffBundles: OLD and NEW may be bundle files. The privilege
// widening shipped as a bundle shows exactly the decisions and rows of the
// same change as a directory (exit 3); a bundle of the unchanged set
// against the directory shows no changes (exit 0); a file that is not a
// bundle is refused (exit 1).
func TestPolicyDiffBundles(t *testing.T) {
	db, _ := diffDatabase(t)
	old, wide := copyRego(t), reportsWithoutPrivilege(t)
	oldB, wideB := bundleOf(t, old, "r1"), bundleOf(t, wide, "r2")
	code, fromDirs, _ := diffJSON(t, "--database-url", db.URL, old, wide)
	if code != exitWidens {
		t.Fatalf("directories: exit %d", code)
	}
	code, fromBundles, _ := diffJSON(t, "--database-url", db.URL, oldB, wideB)
	if code != exitWidens || !reflect.DeepEqual(fromBundles.Decisions, fromDirs.Decisions) || !reflect.DeepEqual(fromBundles.Rows, fromDirs.Rows) ||
		fromBundles.New.Path != wideB || fromBundles.New.Revision == fromDirs.New.Revision {
		t.Fatalf("bundles: exit %d\n%+v\nwant the changes of\n%+v", code, fromBundles, fromDirs)
	}
	if code, rep, _ := diffJSON(t, "--database-url", db.URL, old, oldB); code != 0 || len(rep.Decisions)+len(rep.Rows) != 0 {
		t.Fatalf("same set as a bundle: exit %d %+v", code, rep)
	}
	junk := filepath.Join(t.TempDir(), "junk.tar.gz")
	if err := os.WriteFile(junk, []byte("not a bundle"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut syncBuffer
	if code := mainWith(context.Background(), []string{"policy", "diff", old, junk}, envOf(nil), &out, &errOut); code != exitFailure || !strings.Contains(errOut.String(), "NEW "+junk) {
		t.Fatalf("junk bundle: exit %d %s", code, errOut.String())
	}
}

// TestPolicyTestMutateFlags: the mutation flags go with --mutate (usage
// error otherwise), and --files names policy modules of the set.
func TestPolicyTestMutateFlags(t *testing.T) {
	for _, args := range [][]string{{"--workers", "2"}, {"--json"}, {"--files", "fleet/authz/authz.rego"}} {
		var out, errOut syncBuffer
		if code := mainWith(context.Background(), append([]string{"policy", "test"}, args...), envOf(nil), &out, &errOut); code != exitUsage {
			t.Fatalf("%v without --mutate: exit %d", args, code)
		}
	}
	var out, errOut syncBuffer
	code := mainWith(context.Background(), []string{"policy", "test", "--mutate", "--files", "fleet/nope.rego"}, envOf(nil), &out, &errOut)
	if code != exitFailure || !strings.Contains(errOut.String(), `no policy module "fleet/nope.rego"`) {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}
