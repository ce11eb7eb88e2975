package main

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// tables lists the tables of the fleetapi schema in db (bun's own aside).
func tables(t *testing.T, db *storagetest.DB) []string {
	t.Helper()
	var names []string
	err := db.DB.NewRaw(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'bun_%' ORDER BY 1`).
		Scan(context.Background(), &names)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestMigrateDownNeedsConfirm: without --confirm, migrate down names every
// table it would drop (with its rows), changes nothing and exits 2; with
// --confirm it rolls back.
func TestMigrateDownNeedsConfirm(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	before := tables(t, db)
	if len(before) < 8 {
		t.Fatalf("tables of a migrated database: %v", before)
	}
	for _, args := range [][]string{{"migrate", "down"}, {"migrate", "--database-url", db.URL, "down"}} {
		r := runMain(t, env, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "nothing was changed") || !strings.Contains(r.stdout, "would roll back") {
			t.Fatalf("%v: %+v", args, r)
		}
		for _, table := range before {
			if !regexp.MustCompile(`drops table ` + table + ` with its \d+ rows`).MatchString(r.stdout) {
				t.Errorf("%v does not say it drops table %s:\n%s", args, table, r.stdout)
			}
		}
		if !strings.Contains(r.stdout, "drops table accounts with its 12 rows") {
			t.Errorf("the row count of accounts is not told:\n%s", r.stdout)
		}
		if after := tables(t, db); !slices.Equal(after, before) {
			t.Fatalf("migrate down without --confirm changed the schema: %v, was %v", after, before)
		}
		if out := runOK(t, env, "migrate", "status"); strings.Contains(out, "pending") {
			t.Fatalf("status after an unconfirmed down: %s", out)
		}
	}
	r := runMain(t, env, "migrate", "down", "--confirm")
	if r.code != 0 || !strings.Contains(r.stdout, "rolled back group") {
		t.Fatalf("confirmed down: %+v", r)
	}
	if after := tables(t, db); len(after) != 0 {
		t.Fatalf("tables left after the confirmed down: %v", after)
	}
	if r := runMain(t, env, "migrate", "down"); r.code != 0 || !strings.Contains(r.stdout, "nothing to roll back") {
		t.Fatalf("down of an empty schema: %+v", r)
	}
}

var revokeHint = regexp.MustCompile("`fleetapi token revoke ([0-9 ]+)`")

// TestServeRefusesDemoTokens: serve does not start on a database where
// demo tokens work; the error names each of them (account, name, id) and
// the way out, and the way out works: after the suggested revoke serve
// starts, and --allow-demo-tokens starts it anyway.
func TestServeRefusesDemoTokens(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0"}
	runOK(t, env, "import", writeDemoFile(t))

	r := runBounded(t, env, "serve")
	if r.code != 1 || strings.Contains(r.stdout, `"msg":"listening"`) {
		t.Fatalf("serve with demo tokens: %+v", r)
	}
	active, err := demodata.ActiveTokens(context.Background(), db.DB, time.Now())
	if err != nil || len(active) == 0 {
		t.Fatalf("active demo tokens: %v %v", active, err)
	}
	for _, tok := range active {
		if want := `token ` + strconv.FormatInt(tok.ID, 10) + ` "` + tok.Name + `" of account "` + tok.Username + `"`; !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not name %s:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stderr, "--allow-demo-tokens") {
		t.Errorf("the refusal does not name --allow-demo-tokens:\n%s", r.stderr)
	}
	m := revokeHint.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("the refusal does not say which revoke to run:\n%s", r.stderr)
	}

	// --allow-demo-tokens: starts.
	startServeWith(t, env, "serve", "--allow-demo-tokens")

	// One demo token left is enough to refuse.
	ids := strings.Fields(m[1])
	runOK(t, env, append([]string{"token", "revoke"}, ids[1:]...)...)
	if r := runBounded(t, env, "serve"); r.code != 1 || !strings.Contains(r.stderr, "1 active demo tokens") {
		t.Fatalf("serve with one demo token left: %+v", r)
	}
	// The way out it names works.
	runOK(t, env, "token", "revoke", ids[0])
	addr := startServeWith(t, env, "serve")
	st, _, _, err := getStatus(http.DefaultClient, "http://"+addr+"/api/v2/me", demodata.Tokens()[0].Secret)
	if err != nil || st != http.StatusUnauthorized {
		t.Fatalf("a revoked demo token: %d %v", st, err)
	}
}

// startServeWith runs the program with args until the test ends and
// returns the API address.
func startServeWith(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, envOf(env), logs) }()
	addr := waitForAddr(t, logs, done)
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return addr
}

// TestDevDatabaseURL: dev never uses the database serve uses by default;
// it takes the server it found (FLEET_DATABASE_URL's, 127.0.0.1:5432, a
// private cluster) with the database fleetapi_dev, unless --database-url
// names one.
func TestDevDatabaseURL(t *testing.T) {
	tests := []struct {
		found    string
		explicit bool
		want     string
	}{
		{storage.DefaultURL, false, "postgres://postgres@127.0.0.1:5432/fleetapi_dev?sslmode=disable"},
		{"postgres://ops:pw@db.internal:5433/prod?sslmode=require", false, "postgres://ops:pw@db.internal:5433/fleetapi_dev?sslmode=require"},
		{"postgres://postgres@/fleetapi?host=%2Ftmp%2Fpg%2Fsocket%2F.s.PGSQL.5432&sslmode=disable", false, "postgres://postgres@/fleetapi_dev?host=%2Ftmp%2Fpg%2Fsocket%2F.s.PGSQL.5432&sslmode=disable"},
		{"postgres://postgres@127.0.0.1:5432/mydemo?sslmode=disable", true, "postgres://postgres@127.0.0.1:5432/mydemo?sslmode=disable"},
	}
	for _, tc := range tests {
		got, err := devDatabaseURL(tc.found, tc.explicit)
		if err != nil || got != tc.want {
			t.Errorf("devDatabaseURL(%q, %v) = %q, %v; want %q", tc.found, tc.explicit, got, err, tc.want)
		}
		if !tc.explicit && databaseName(got) == databaseName(storage.DefaultURL) {
			t.Errorf("dev uses serve's database %q", got)
		}
	}
}

// TestDevRefusesForeignDatabase: dev refuses a database that holds an
// account that is not in the demo data, names it, and adds nothing (no
// demo token, no demo account, no migration).
func TestDevRefusesForeignDatabase(t *testing.T) {
	for name, file := range map[string]string{
		"foreign_username": `{"accounts": [{"username": "realco", "type": "manager"}, {"username": "admin", "type": "admin"}]}`,
		"demo_name_other_type": `{"accounts": [{"username": "acme", "type": "manager"}],
			"tokens": [{"account": "acme", "name": "prod", "secret": "flt_realAcme000000000000000000000000", "permissions": ["*"]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			db := storagetest.New(t)
			if _, err := importfile.Load(context.Background(), db.DB, strings.NewReader(file)); err != nil {
				t.Fatal(err)
			}
			before := rowCountsOf(t, db)
			r := runBounded(t, nil, "dev", "--database-url", db.URL, "--addr", "127.0.0.1:0")
			if r.code != 1 || !strings.Contains(r.stderr, "refusing database") || strings.Contains(r.stdout, `"msg":"listening"`) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			want := `"realco"`
			if name == "demo_name_other_type" {
				want = `"acme"`
			}
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the refusal does not name %s: %s", want, r.stderr)
			}
			if after := rowCountsOf(t, db); !maps.Equal(after, before) {
				t.Fatalf("dev changed a refused database: %v, was %v", after, before)
			}
		})
	}
}

// TestDevServesDemoDatabase: dev loads the demo data into the database
// it is given, prints the demo tokens on stdout, serves (its demo tokens
// allowed), and accepts its own database again on a second run.
func TestDevServesDemoDatabase(t *testing.T) {
	db := storagetest.New(t)
	for run := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- mainWith(ctx, []string{"dev", "--database-url", db.URL, "--addr", "127.0.0.1:0"}, envOf(nil), &out, &errb)
		}()
		var addr string
		deadline := time.Now().Add(60 * time.Second)
		for addr == "" && time.Now().Before(deadline) {
			if m := listenRe.FindStringSubmatch(out.String()); m != nil {
				addr = m[1]
				break
			}
			select {
			case code := <-done:
				t.Fatalf("run %d: dev exited %d\n%s\n%s", run, code, out.String(), errb.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		if addr == "" {
			t.Fatalf("run %d: dev did not start:\n%s\n%s", run, out.String(), errb.String())
		}
		tok := demodata.Tokens()[0]
		if st, _, _, err := getStatus(http.DefaultClient, "http://"+addr+"/api/v2/me", tok.Secret); err != nil || st != 200 {
			t.Fatalf("run %d: GET /me with a demo token: %d %v", run, st, err)
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("run %d: dev exited %d\n%s", run, code, errb.String())
		}
		if !strings.Contains(out.String(), tok.Secret) || !strings.Contains(errb.String(), `dev: using database "`+databaseName(db.URL)+`"`) ||
			!strings.Contains(errb.String(), "demo data loaded") {
			t.Fatalf("run %d: stdout should hold the demo tokens, stderr the progress:\n%s\n%s", run, out.String(), errb.String())
		}
	}
	if got, err := demodata.ForeignAccounts(context.Background(), db.DB); err != nil || len(got) != 0 {
		t.Fatalf("after dev: %v %v", got, err)
	}
}

// TestExplainResolvesRoutes: for every route of the API, explaining the
// request path (and the path under /api/v2) gives the decision of its
// template, the one the server makes, not a denial of a route that does
// not exist.
func TestExplainResolvesRoutes(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	// A token that grants exactly the routes' templates.
	var perms []string
	for _, r := range tenancy.Routes() {
		if r.Template != "/me" {
			perms = append(perms, "--permission", r.String())
		}
	}
	runOK(t, env, append([]string{"token", "create", "--account", "acme", "--name", "exact"}, perms...)...)
	list := runOK(t, env, "token", "list", "--account", "acme")
	id := regexp.MustCompile(`(?m)^(\d+)\s+exact\s`).FindStringSubmatch(list)
	if id == nil {
		t.Fatalf("no token exact in:\n%s", list)
	}
	decision := regexp.MustCompile(`(?m)^decision: (.*)$`)
	for _, r := range tenancy.Routes() {
		path := strings.ReplaceAll(r.Template, "{id}", "12")
		for _, route := range []string{r.Method + " " + path, r.Method + " /api/v2" + path, strings.ToLower(r.Method) + " " + path + "?x=1"} {
			out := runOK(t, env, "policy", "explain", "--token-id", id[1], "--route", route)
			d := decision.FindStringSubmatch(out)
			if d == nil || d[1] != "ALLOW" || !strings.Contains(out, "calling "+r.String()) {
				t.Errorf("explain %q: want ALLOW for %s:\n%s", route, r, out)
			}
		}
	}
}

// rowCountsOf counts the rows of the tables dev would fill.
func rowCountsOf(t *testing.T, db *storagetest.DB) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, table := range []string{"accounts", "tokens", "objects", "services", "passengers"} {
		var n int
		if err := db.DB.NewRaw("SELECT count(*) FROM "+table).Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		counts[table] = n
	}
	return counts
}
