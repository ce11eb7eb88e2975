package policy

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addHiddenFiles puts what editors, VCS and operators leave in a policy
// directory into dir: a `.backup/` copy of a module (which would redefine
// every rule of fleet.authz), a hidden directory deeper down with a module
// that does not parse, a `.git/` directory, and hidden files (an editor's
// lock file, a deployment's temporary file). None of it is part of the set.
func addHiddenFiles(t testing.TB, dir string) {
	t.Helper()
	authz, err := os.ReadFile(filepath.Join(dir, "fleet/authz/authz.rego"))
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		".backup/fleet/authz/authz.rego": string(authz),
		".backup/fleet/authz/extra.rego": "package fleet.authz\n\ndecision := {\"allow\": true}\n",
		"fleet/scope/.old/broken.rego":   "package fleet.scope\n\nthis is not rego {\n",
		".git/HEAD":                      "ref: refs/heads/main\n",
		"fleet/.#scope.rego":             "package fleet.scope\n\nservices if true\n",
		"fleet/authz/.tmp-authz.rego":    "package fleet.authz\n\ndecision := {\"allow\": true}\n",
	} {
		file := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHiddenFilesIgnored (issue 19 item 13): hidden files and everything
// under hidden directories of a policy directory are not part of the set:
// New (serve, check, explain, diff), RunTests (policy test and, through
// the same loader, Mutate) and ExportModules load the same set, with the same revision, as from the
// clean copy, and the watcher's fingerprint does not see them.
func TestHiddenFilesIgnored(t *testing.T) {
	ctx := context.Background()
	clean := copyPolicy(t)
	dir := copyPolicy(t)
	addHiddenFiles(t, dir)

	want := newEngine(t, Options{Dir: clean}).Revision()
	e, err := New(ctx, Options{Dir: dir, Schema: ResourceList(testResources)})
	if err != nil {
		t.Fatalf("New with hidden files in the directory: %v", err)
	}
	if e.Revision() != want {
		t.Errorf("revision %s with hidden files, want the clean copy's %s", e.Revision(), want)
	}
	if d, err := e.Decide(ctx, principal("user").at("GET", "/reports")); err != nil || !d.Allow {
		t.Errorf("decision: %+v %v", d, err)
	}
	if err := Check(ctx, Options{Dir: dir, Schema: ResourceList(testResources)}, io.Discard); err != nil {
		t.Errorf("Check: %v", err)
	}
	rep, err := RunTests(ctx, dir, io.Discard)
	if err != nil || rep.Failed != 0 || rep.Coverage != 100 {
		t.Errorf("RunTests: %d failed, coverage %.2f, %v", rep.Failed, rep.Coverage, err)
	}
	for f := range rep.Files {
		if strings.Contains("/"+f, "/.") {
			t.Errorf("RunTests covered the hidden module %s", f)
		}
	}
	written, err := ExportModules(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range written {
		for _, elem := range strings.Split(filepath.ToSlash(f), "/") {
			if strings.HasPrefix(elem, ".") {
				t.Errorf("ExportModules wrote the hidden module %s", f)
			}
		}
	}
	fpClean, err := sourceFingerprint(clean)
	if err != nil {
		t.Fatal(err)
	}
	if fp, err := sourceFingerprint(dir); err != nil || fp != fpClean {
		t.Errorf("fingerprint with hidden files %s (%v), want the clean copy's %s", fp, err, fpClean)
	}
	// A change inside a hidden directory is no change of the set.
	res, err := e.Reload(ctx, "test")
	if err != nil || res.Changed {
		t.Errorf("Reload after hidden files only: %+v %v", res, err)
	}
}
