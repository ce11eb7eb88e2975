package main

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/fleetapi/fleetapi"

// allowed lists, per package, the fleetapi packages it may import
// (DESIGN §1: arrows point inward; nothing imports api or cmd).
var allowed = map[string][]string{
	"tenancy":             {},
	"telemetry":           {},
	"migrations":          {},
	"policy":              {"tenancy"},
	"storage":             {"policy", "tenancy", "migrations"},
	"storage/storagetest": {"storage", "migrations"},
	"api/ratelimit":       {},
	"api":                 {"api/ratelimit", "tenancy", "policy", "storage", "telemetry"},
}

// forbidden lists third-party imports a package must not have.
var forbidden = map[string][]string{
	"storage": {"github.com/go-fuego/fuego"},
	"policy":  {"github.com/uptrace/bun"},
	"tenancy": {"github.com/uptrace/bun", "github.com/go-fuego/fuego", "github.com/open-policy-agent/opa"},
}

// TestDependencyDirection keeps the package arrows of DESIGN §1 and
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
				t.Errorf("%s imports %s, which DESIGN §1 does not allow", pkg, rel)
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
