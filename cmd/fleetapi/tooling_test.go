package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tooling are the packages that work on policy sets rather than serve
// requests: mutation testing, the row oracle, synthetic principals and
// policy diff (STYLE.md: tooling lives apart from the request path).
var tooling = []string{"tooling/mutation", "tooling/oracle", "tooling/synthetic", "tooling/policydiff"}

// requestPath are the packages a request runs through: the router and
// its guard, the queries, the policy engine, the principal and the
// telemetry providers.
var requestPath = []string{"api", "api/ratelimit", "storage", "storage/authsync", "storage/audit", "storage/limits", "policy", "tenancy", "telemetry", "migrations"}

// trustedJobs are the whole-table jobs of the command line and the test
// database helper: the request path does not reach them either.
var trustedJobs = []string{"storage/importfile", "storage/demodata", "storage/synth", "storage/pgserver", "storage/storagetest"}

// TestToolingOutOfRequestPath: no package the request-path packages
// import, directly or not (`go list -deps` of their non-test code), is
// tooling or a trusted job. Only the binary's own command files may
// import tooling; TestServeDoesNotReachTooling checks that serve's code
// does not.
func TestToolingOutOfRequestPath(t *testing.T) {
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for _, p := range requestPath {
		args = append(args, module+"/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"/policy") || !slices.Contains(deps, "github.com/open-policy-agent/opa/v1/rego") {
		t.Fatalf("go list -deps lists %d packages, without the policy engine: %q", len(deps), deps)
	}
	// The tooling is in its packages (a module path that does not exist
	// would pass the check below without a word), and every package of
	// the tooling folder is in tooling (a new one is checked too).
	cmd = exec.Command("go", "list", "-f", "{{.ImportPath}}", "./tooling/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list of the tooling packages: %v\n%s", err, out)
	}
	var found []string
	for _, p := range strings.Fields(string(out)) {
		found = append(found, strings.TrimPrefix(p, module+"/"))
	}
	want := slices.Sorted(slices.Values(tooling))
	if slices.Sort(found); !slices.Equal(found, want) {
		t.Errorf("the packages under tooling/ are %q, tooling lists %q", found, want)
	}
	for _, bad := range append(slices.Clone(tooling), trustedJobs...) {
		if slices.Contains(deps, module+"/"+bad) {
			t.Errorf("the request path (%s) reaches %s", strings.Join(requestPath, ", "), bad)
		}
	}
}

// TestServeDoesNotReachTooling: within the one fleetapi binary, which
// keeps `policy test --mutate` and `policy diff`, the code of the serve
// and dev commands never uses a tooling package. It follows package
// main's non-test code from runServe and runDev by name: a function,
// variable or type reached is any package-level one whose name appears in
// a reached declaration, and a method is reached when its name is
// selected anywhere in one (x.name, whatever x is: an over-approximation,
// so a path it misses does not exist). No reached declaration may select
// from a tooling package. The same walk from policyGroup must reach all of
// them, so that the walk itself is checked.
func TestServeDoesNotReachTooling(t *testing.T) {
	decls := mainDecls(t)
	for _, root := range []string{"runServe", "runDev"} {
		if used := reachedTooling(t, decls, root); len(used) > 0 {
			t.Errorf("%s reaches tooling: %s", root, strings.Join(used, "; "))
		}
	}
	used := strings.Join(reachedTooling(t, decls, "policyGroup"), "; ")
	for _, p := range tooling {
		if p != "tooling/synthetic" && p != "tooling/oracle" && !strings.Contains(used, module+"/"+p) {
			t.Errorf("the walk from policyGroup does not find %s (it uses it): the walk is broken; found %s", p, used)
		}
	}
}

// mainDecl is one package-level declaration of package main: the names
// it mentions, the method names it selects and the packages it selects
// from (import path → the first use).
type mainDecl struct {
	name     string
	idents   map[string]bool
	selected map[string]bool
	packages map[string]string
}

// mainDecls parses package main's non-test files into declarations, by
// name; a method is "Type.name", and several declarations of one name
// (init-free vars in one spec) are merged.
func mainDecls(t *testing.T) map[string]*mainDecl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	decls := map[string]*mainDecl{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = path
		}
		add := func(name string, node ast.Node) {
			d := decls[name]
			if d == nil {
				d = &mainDecl{name: name, idents: map[string]bool{}, selected: map[string]bool{}, packages: map[string]string{}}
				decls[name] = d
			}
			ast.Inspect(node, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.Ident:
					d.idents[x.Name] = true
				case *ast.SelectorExpr:
					d.selected[x.Sel.Name] = true
					if id, ok := x.X.(*ast.Ident); ok && imports[id.Name] != "" {
						if _, seen := d.packages[imports[id.Name]]; !seen {
							d.packages[imports[id.Name]] = fset.Position(x.Pos()).String()
						}
					}
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			switch x := decl.(type) {
			case *ast.FuncDecl:
				name := x.Name.Name
				if x.Recv != nil {
					name = "." + name
				}
				add(name, x)
			case *ast.GenDecl:
				for _, spec := range x.Specs {
					switch sp := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							add(n.Name, sp)
						}
					case *ast.TypeSpec:
						add(sp.Name.Name, sp)
					}
				}
			}
		}
	}
	return decls
}

// reachedTooling walks decls from root (see TestServeDoesNotReachTooling)
// and returns the uses of tooling packages it finds, "package at place
// (in declaration)".
func reachedTooling(t *testing.T, decls map[string]*mainDecl, root string) []string {
	t.Helper()
	if decls[root] == nil {
		t.Fatalf("package main has no %s", root)
	}
	seen := map[string]bool{root: true}
	todo := []string{root}
	var used []string
	for len(todo) > 0 {
		d := decls[todo[0]]
		todo = todo[1:]
		for path, at := range d.packages {
			for _, p := range tooling {
				if path == module+"/"+p {
					used = append(used, path+" at "+at+" (in "+d.name+")")
				}
			}
		}
		next := func(name string) {
			if decls[name] != nil && !seen[name] {
				seen[name] = true
				todo = append(todo, name)
			}
		}
		for id := range d.idents {
			next(id)
		}
		for sel := range d.selected {
			next("." + sel)
		}
	}
	slices.Sort(used)
	return used
}
