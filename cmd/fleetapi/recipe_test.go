package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The recipe is docs/architecture.md's "Adding a list resource": its
// example resource is added "like" an existing one, and TestRecipe follows
// the recipe on that one.

// recipePlaces are the files where a list resource is declared, by the
// recipe's spelling of each (its example resource's), each with what the
// like resource has there ({r}: its name, "reports"; {R}: its model,
// "Report"). The recipe's table must name exactly these files.
var recipePlaces = map[string][]string{
	"migrations/<prefix>_drivers.{up,down}.sql": {"CREATE TABLE {r} (", "SELECT version_table('{r}', ARRAY['{r1}_id'"},
	"storage/drivers.go":                        {"declare[{R}]("},
	"api/drivers.go":                            {"func (s *Server) register{Rs}("},
	"storage/importfile/drivers.go":             {`declareSection(spec[import{R}]{name: "{r}"`, "dump: dump{Rs}"},
	"api/drivers_test.go":                       nil, // what only the resource knows: the like one may have none
	"api/server.go":                             {"s.register{Rs}(v2)"},
	"tenancy/routes.go":                         {`{"GET", "/{r}"}`},
	"policy/rego/fleet/scope/scope.rego":        {"\n{r} if ", "- input.{r}: schema.row"},
	"policy/rego/fleet/scope/scope_test.rego":   {"{r}"},
	"policy/rego/fleet/authz/authz.rego":        {`"GET /{r}": `},
	"storage/demodata/demodata.json":            {`"{r}": [`},
	"cmd/fleetapi/apiguide.md":                  {"`GET /{r}`", "\n| {r} | ", "<!-- notes GET /{r} -->"},
	"storage/testdata/":                         nil, // the golden SQL, by command
	"policy/rego/fleet/api/routes.rego":         {`"GET /{r}"`},
	"api/testdata/openapi.golden.json":          {`"operationId": "get_{r}"`},
	"client/":                                   nil, // generated from the golden document
	"docs/api.md":                               {"GET /{r}"},
}

// recipeMentions are the files, other than tests and docs, that name the
// like resource's route without being a place to declare a new resource,
// with why.
var recipeMentions = map[string]string{
	"api/openapi_doc.go":           "the example of a refused route in the OpenAPI document's errors",
	"cmd/fleetapi/policycmd.go":    "an example of --route in the help of fleetapi policy explain",
	"storage/demodata/demodata.go": "the demo tokens' notes, which name what a token may call",
	"cmd/fleetops/":                "operations tooling: the load mixes and fail-over drills choose the routes they exercise",
	"client/client.gen.go":         "generated (the client/ row)",
	"api/reports_write.go":         "the writes of reports (docs/design.md §15), not the list: a list resource needs no write",
}

// recipeProse are backticked spans of the recipe that are not code of the
// repository, with why.
var recipeProse = map[string]string{
	"undefined ref: input.drivers":                                    "opa check's message",
	`operation "get_drivers": want one of the tags of docs/api.md §1`: "formatted by the document's build",
	"GET /drivers": "the example's route",
	"drivers (driver_id, account_id, name, phone, license_no, active, imei[])": "the example's table",
	"imei text[]":                 "the example's column",
	"People and groups":           "a tag of apiTags",
	"<resource>":                  "a placeholder",
	"api/<resource>_test.go":      "a placeholder",
	"count(*)":                    "SQL",
	"generate --force":            "a command's flag",
	"get_<resource>":              "a placeholder",
	"holds(\"reports\")":          "scope.rego's, quoted",
	"[]":                          "an empty list of privileges",
	"- input.drivers: schema.row": "checked as a place (scope.rego)",
	"declare[Driver]()":           "the declaration of a table not counted: none is today",
	"TestDrivers":                 "the example's own test (api/drivers_test.go)",
}

// TestRecipe follows docs/architecture.md's "Adding a list resource" on
// the resource its example is like (/reports): every file its table
// names exists and declares that resource as the row says (recipePlaces),
// every file declaring it is a row (or recipeMentions says why not),
// every Go name, Rego rule, SQL function and test it gives is defined,
// every command names a package and test that exist, and the example's
// version_table call compares what TestVersionedColumnsAreTheDescriptors
// wants (the id first). The recipe cannot go stale silently: a renamed
// symbol, a moved file, a new place of declaration fails here.
func TestRecipe(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Adding a list resource\n")
	if start < 0 {
		t.Fatal(`docs/architecture.md has no section "Adding a list resource"`)
	}
	section := doc[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	m := regexp.MustCompile("a list like `/([a-z_]+)`").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the recipe names no resource its example is like (\"a list like `/reports`\")")
	}
	like := m[1]
	example := "drivers"
	sub := strings.NewReplacer("{r}", like, "{Rs}", capital(like), "{R}", capital(strings.TrimSuffix(like, "s")), "{r1}", strings.TrimSuffix(like, "s"))
	onLike := strings.NewReplacer(example, like, capital(example), capital(like), capital(strings.TrimSuffix(example, "s")), capital(strings.TrimSuffix(like, "s")),
		strings.TrimSuffix(example, "s")+"_id", strings.TrimSuffix(like, "s")+"_id")

	code := repositoryCode(t, root)
	defined := goNames(t, root)

	// The table of files: every row's files exist and hold the like
	// resource; every place is a row.
	rows := 0
	named := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		c := strings.Split(line, "|")
		if len(c) < 4 || !slices.Contains([]string{"own", "shared", "regenerated"}, strings.TrimSpace(c[1])) {
			continue
		}
		rows++
		dir := ""
		for _, f := range backticked(c[2]) {
			if !strings.Contains(f, "/") && dir != "" {
				f = dir + f
			}
			dir = f[:strings.LastIndex(f, "/")+1]
			named[f] = true
			checks, ok := recipePlaces[f]
			if !ok {
				t.Errorf("the recipe's row names %s, which TestRecipe does not know: add it to recipePlaces (cmd/fleetapi/recipe_test.go) with what /%s has there", f, like)
				continue
			}
			if checks == nil && !strings.HasSuffix(f, "/") {
				// the example's own file: its directory exists
				if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
					t.Errorf("%s: no directory %s: the recipe is stale", f, dir)
				}
				continue
			}
			paths := expand(t, root, onLike.Replace(f))
			if strings.Contains(f, "<prefix>") {
				paths = expand(t, root, dir+"*.sql") // the like resource's may be any
			}
			if len(paths) == 0 {
				t.Errorf("%s: no file %s: the recipe is stale", f, onLike.Replace(f))
				continue
			}
			for _, want := range checks {
				want = sub.Replace(want)
				if !slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(code[p], want) }) {
					t.Errorf("%s: %v hold no %q: the recipe's row is stale, or recipePlaces", f, paths, want)
				}
			}
		}
	}
	if rows < 10 {
		t.Fatalf("the recipe's table has %d rows", rows)
	}
	for f := range recipePlaces {
		if !named[f] {
			t.Errorf("%s, where every list resource is declared, is not a row of the recipe: add it to docs/architecture.md's table", f)
		}
	}
	// Every file that names the like resource's route is a place or says why not.
	route := regexp.MustCompile(`/` + like + `\b`)
	for p, text := range code {
		if p == "\x00all" || strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_test.rego") || strings.HasPrefix(p, "docs/") || !route.MatchString(text) {
			continue
		}
		known := slices.ContainsFunc(slices.Collect(func(yield func(string) bool) {
			for f := range recipePlaces {
				if !yield(onLike.Replace(f)) {
					return
				}
			}
			for f := range recipeMentions {
				if !yield(f) {
					return
				}
			}
		}), func(f string) bool {
			return p == f || strings.HasSuffix(f, "/") && strings.HasPrefix(p, f) || strings.Contains(f, "<prefix>") && strings.HasPrefix(p, "migrations/")
		})
		if !known {
			t.Errorf("%s names /%s and is not in the recipe: if a new list resource must be declared there, add its row to docs/architecture.md's "+
				"\"Adding a list resource\" and to recipePlaces; if not, say why in recipeMentions (cmd/fleetapi/recipe_test.go)", p, like)
		}
	}

	// Every name and command of the section, up to the record of its
	// measure (whose failures are quoted, not code).
	if measured := strings.Index(section, "\n**Measured**"); measured >= 0 {
		section = section[:measured]
	}
	ident := regexp.MustCompile(`^(?:[a-z]+\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?$`)
	commit := regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	for _, span := range backticked(section) {
		_, place := recipePlaces[span]
		if _, ok := recipeProse[span]; ok || place || strings.HasSuffix(span, "/") || strings.HasSuffix(span, "/...") ||
			strings.HasPrefix(span, "/") || commit.MatchString(span) {
			continue // a place, a directory, a route, a commit
		}
		s := onLike.Replace(span)
		switch {
		case strings.HasSuffix(s, ".go") && !strings.Contains(s, "/"):
			if !slices.ContainsFunc(slices.Collect(maps.Keys(code)), func(p string) bool { return path.Base(p) == s }) {
				t.Errorf("the recipe names %s: no such file", span)
			}
		case strings.HasPrefix(s, "SELECT ") && strings.Contains(s, "("):
			fn := strings.TrimSpace(s[len("SELECT "):strings.Index(s, "(")])
			if !strings.Contains(code["\x00all"], "FUNCTION "+fn+"(") {
				t.Errorf("the recipe calls %s: no migration creates the function %s", span, fn)
			}
			if fn == "version_table" {
				checkVersionTable(t, section, span)
			}
		case strings.HasPrefix(s, "go "):
			for _, part := range strings.Split(s, "&&") {
				checkCommand(t, root, strings.Fields(part), defined)
			}
		case strings.Contains(s, "/") && !strings.ContainsAny(s, " <{"):
			if _, err := os.Stat(filepath.Join(root, s)); err != nil {
				t.Errorf("the recipe names %s: no such file", span)
			}
		case ident.MatchString(s):
			name := ident.FindStringSubmatch(s)[1]
			if isGoName(name) {
				if !defined[name] {
					t.Errorf("the recipe names %s (on /%s: %s): no Go declaration of %s", span, like, s, name)
				}
			} else if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(code["\x00all"]) {
				t.Errorf("the recipe names %s (on /%s: %s): no file of the repository names it", span, like, s)
			}
		default:
			if !strings.Contains(code["\x00all"], s) && !strings.Contains(code["\x00all"], span) {
				t.Errorf("the recipe says `%s` (on /%s: `%s`): no file of the repository holds it; fix the recipe, or add it to recipeProse with why", span, like, s)
			}
		}
	}
}

// checkVersionTable checks the example's version_table call: the
// example's id first, then columns of the example table.
func checkVersionTable(t *testing.T, section, call string) {
	t.Helper()
	m := regexp.MustCompile("`drivers \\(([^)]*)\\)`").FindStringSubmatch(section)
	if m == nil {
		t.Error("the recipe's example table is not given as `drivers (id, columns...)`")
		return
	}
	cols := strings.Split(strings.ReplaceAll(strings.ReplaceAll(m[1], "[]", ""), " ", ""), ",")
	args := regexp.MustCompile(`'([a-z_]+)'`).FindAllStringSubmatch(strings.SplitN(call, "ARRAY", 2)[1], -1)
	if len(args) == 0 || args[0][1] != cols[0] {
		t.Errorf("the recipe's %s: want the id %s first (TestVersionedColumnsAreTheDescriptors: account_id, the id, the filter and search columns)", call, cols[0])
	}
	for _, a := range args {
		if !slices.Contains(cols, a[1]) || a[1] == "account_id" {
			t.Errorf("the recipe's %s names %s, not a column of the example besides account_id", call, a[1])
		}
	}
}

// checkCommand checks a go command of the recipe: its package exists and
// its -run names a test.
func checkCommand(t *testing.T, root string, args []string, defined map[string]bool) {
	t.Helper()
	for i, a := range args {
		if strings.HasPrefix(a, "./") {
			if fi, err := os.Stat(filepath.Join(root, a)); err != nil || !fi.IsDir() {
				t.Errorf("the recipe's command %q: no package %s", strings.Join(args, " "), a)
			}
		}
		if a == "-run" && i+1 < len(args) && !defined[args[i+1]] {
			t.Errorf("the recipe's command %q: no test %s", strings.Join(args, " "), args[i+1])
		}
	}
}

// backticked returns the `spans` of text, in order.
func backticked(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(text, -1) {
		out = append(out, strings.Join(strings.Fields(m[1]), " "))
	}
	return out
}

// expand returns the files a recipe path names: <prefix> any prefix,
// {a,b} each, a directory itself.
func expand(t *testing.T, root, path string) []string {
	t.Helper()
	var out []string
	alts := []string{path}
	if m := regexp.MustCompile(`\{([a-z]+),([a-z]+)\}`).FindStringSubmatch(path); m != nil {
		alts = []string{strings.Replace(path, m[0], m[1], 1), strings.Replace(path, m[0], m[2], 1)}
	}
	for _, p := range alts {
		matches, err := filepath.Glob(filepath.Join(root, strings.ReplaceAll(p, "<prefix>", "*")))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

// repositoryCode reads the repository's files but the docs (and git's),
// by path from the root; "\x00all" is their concatenation.
func repositoryCode(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var all strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || d.Name() == "node_modules" { // web/node_modules: npm packages, not the repository's code
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".rego", ".sql", ".json", ".md", ".sh", ".yaml", ".yml", "":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = string(b)
		if !strings.HasPrefix(rel, "docs/") && !strings.HasSuffix(rel, ".md") || rel == "cmd/fleetapi/apiguide.md" {
			all.Write(b)
			all.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out["\x00all"] = all.String()
	return out
}

// goNames returns the names declared in the repository's Go files:
// functions and methods, types, variables, constants, struct fields.
func goNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".go" {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				out[x.Name.Name] = true
			case *ast.TypeSpec:
				out[x.Name.Name] = true
			case *ast.ValueSpec:
				for _, n := range x.Names {
					out[n.Name] = true
				}
			case *ast.Field:
				for _, n := range x.Names {
					out[n.Name] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// isGoName reports whether name is spelt as a Go name of this repository
// (mixed case), not as a Rego rule, a SQL name or a column (snake case).
func isGoName(name string) bool {
	return !strings.Contains(name, "_") && strings.ToLower(name) != name
}

// capital returns s with its first letter upper-cased.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
