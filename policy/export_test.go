package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExportModules: the exported files are the set's modules without its
// tests, the generated routes module among them; a missing directory is
// an error.
func TestExportModules(t *testing.T) {
	out := t.TempDir()
	written, err := ExportModules("", out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(written, RoutesModule) {
		t.Errorf("no routes module in %v", written)
	}
	set, err := loadPolicySet("")
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != len(set.modules) {
		t.Errorf("wrote %d files, the set has %d modules", len(written), len(set.modules))
	}
	for _, name := range written {
		if filepath.Ext(name) != ".rego" || strings.HasSuffix(name, "_test.rego") {
			t.Errorf("exported %s", name)
		}
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(out, RoutesModule))
	if err != nil || string(got) != string(RoutesSource()) {
		t.Errorf("routes module: %v\n%s", err, got)
	}
	if _, err := ExportModules(filepath.Join(out, "missing"), t.TempDir()); err == nil {
		t.Error("a missing policy directory was exported")
	}
}
