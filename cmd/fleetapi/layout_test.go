package main

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/fleetapi/fleetapi"

// storageJob is what a sub-package of storage that holds a trusted job
// (import, demo data, synthetic data, PostgreSQL) may import: the core it
// works on, never api or cmd, and no other job.
var storageJob = []string{"storage", "storage/limits", "storage/audit", "policy", "tenancy", "migrations"}

// allowed lists, per package, the fleetapi packages it may import
// (docs/design.md §1: arrows point inward; nothing imports api or cmd). storage
// imports only the jobs that stand below it (authsync, audit, limits: they
// run no scoped query and import nothing of storage), never the trusted
// jobs, and api none of the trusted jobs: they are for the command line,
// never for the request path.
var allowed = map[string][]string{
	"tenancy":             {},
	"telemetry":           {},
	"clock":               {"storage"},
	"delivery":            {"policy", "storage", "tenancy", "webhook"},
	"migrations":          {},
	"policy":              {"tenancy"},
	"storage":             {"policy", "tenancy", "migrations", "rules", "places", "storage/authsync", "storage/audit", "storage/limits", "storage/internal/paging"},
	"storage/authsync":    {"tenancy"},
	"storage/audit":       {"policy", "tenancy"},
	"storage/limits":      {},
	"storage/importfile":  storageJob,
	"storage/demodata":    storageJob,
	"storage/synth":       storageJob,
	"storage/pgserver":    storageJob,
	"storage/storagetest": {"storage", "storage/pgserver", "migrations"},
	"tooling/synthetic":   {"policy", "tenancy"},
	"tooling/oracle":      {"policy"},
	"tooling/mutation":    {"policy"},
	"tooling/policydiff":  {"policy", "tooling/oracle", "tooling/synthetic", "storage", "tenancy"},
	"api/ratelimit":       {},
	"api/metering":        {"storage"},
	"api":                 {"api/ratelimit", "api/metering", "tenancy", "policy", "rules", "storage", "storage/audit", "storage/limits", "telemetry", "webhook", "places"},

	// The paging layer: only storage imports it (internal), and it imports
	// nothing of fleetapi.
	"storage/internal/paging": {},

	// The rule evaluation domain: readings and rules in, what fired out; it
	// imports nothing of fleetapi (and only the standard library:
	// stdlibOnly).
	"rules": {},

	// Webhook signing, sealing and the delivery client: storage and the
	// sender call it; it imports nothing of fleetapi (stdlibOnly).
	"webhook": {},

	// The places domain (zone shapes, validity, containment): nothing of
	// fleetapi; its one third-party import is the geometry library
	// (github.com/golang/geo).
	"places": {},
}

// stdlibOnly lists the packages that import nothing but the standard
// library: domains with no adapter, which anything may call.
var stdlibOnly = []string{"rules", "webhook"}

// forbidden lists third-party imports a package must not have.
var forbidden = map[string][]string{
	"storage":            {"github.com/go-fuego/fuego"},
	"storage/authsync":   {"github.com/go-fuego/fuego", "github.com/open-policy-agent/opa"},
	"storage/audit":      {"github.com/go-fuego/fuego", "github.com/open-policy-agent/opa"},
	"storage/limits":     {"github.com/go-fuego/fuego", "github.com/open-policy-agent/opa"},
	"storage/importfile": {"github.com/go-fuego/fuego"},
	"storage/demodata":   {"github.com/go-fuego/fuego"},
	"storage/synth":      {"github.com/go-fuego/fuego"},
	"storage/pgserver":   {"github.com/go-fuego/fuego"},
	"policy":             {"github.com/uptrace/bun"},
	"tenancy":            {"github.com/uptrace/bun", "github.com/go-fuego/fuego", "github.com/open-policy-agent/opa"},
	"places":             {"github.com/uptrace/bun", "github.com/go-fuego/fuego", "github.com/open-policy-agent/opa"},
}

// TestDependencyDirection keeps the package arrows of docs/design.md §1 and
// STYLE.md: every non-test import of the core packages is checked.
func TestDependencyDirection(t *testing.T) {
	root := filepath.Join("..", "..")
	for pkg, ok := range allowed {
		bp, err := build.ImportDir(filepath.Join(root, pkg), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range bp.Imports {
			for _, bad := range forbidden[pkg] {
				if strings.HasPrefix(imp, bad) {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
			rel, internal := strings.CutPrefix(imp, module+"/")
			if !internal {
				continue
			}
			found := false
			for _, a := range ok {
				found = found || rel == a
			}
			if !found {
				t.Errorf("%s imports %s, which docs/design.md §1 does not allow", pkg, rel)
			}
		}
	}
	// Nothing outside cmd imports api or cmd.
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || !info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(rel, ".") && rel != "." || strings.HasPrefix(rel, "cmd") || strings.HasPrefix(rel, "api") {
			if strings.HasPrefix(rel, ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		bp, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // not a Go package
		}
		for _, imp := range bp.Imports {
			if imp == module+"/api" || strings.HasPrefix(imp, module+"/cmd") {
				t.Errorf("%s imports %s", rel, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStdlibOnly keeps the packages of stdlibOnly on the standard library:
// an import path whose first element has no dot is the standard library's.
func TestStdlibOnly(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, pkg := range stdlibOnly {
		bp, err := build.ImportDir(filepath.Join(root, pkg), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range bp.Imports {
			if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: only the standard library is allowed", pkg, imp)
			}
		}
	}
}

// TestEveryStoragePackageChecked: a new package under storage, policy or
// tooling gets an entry in allowed, so that its imports are checked too.
func TestEveryStoragePackageChecked(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, top := range []string{"storage", "policy", "tooling"} {
		err := filepath.Walk(filepath.Join(root, top), func(path string, info os.FileInfo, err error) error {
			if err != nil || !info.IsDir() {
				return err
			}
			if name := info.Name(); name == "testdata" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			if _, err := build.ImportDir(path, 0); err != nil {
				return nil // no Go package here
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if _, ok := allowed[filepath.ToSlash(rel)]; !ok {
				t.Errorf("package %s is not in allowed: say what it may import", filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
