package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestTenantExport runs `fleetapi tenant export`: the file it writes
// (stdout or --out, mode 0600) loads into an empty database with every
// record inserted; an unknown account is exit 1 naming it, a missing
// argument exit 2.
func TestTenantExport(t *testing.T) {
	src := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": src.URL}
	runOK(t, env, "import", writeDemoFile(t))

	// northwind is a manager at the top: its subtree loads into an empty
	// database as it is.
	r := runMain(t, env, "tenant", "export", "northwind")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "{") || !strings.Contains(r.stdout, `"username":"tailspin"`) ||
		strings.Contains(r.stdout, `"username":"acme"`) || !strings.Contains(r.stderr, "exported northwind: ") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	path := filepath.Join(t.TempDir(), "northwind.json")
	if r := runMain(t, env, "tenant", "export", "--out", path, "northwind"); r.code != 0 || r.stdout != "" {
		t.Fatalf("--out: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("--out file: %v, %v; want mode 0600", fi, err)
	}
	if b, _ := os.ReadFile(path); string(b) != r.stdout {
		t.Error("--out wrote another file than stdout")
	}

	dst := storagetest.New(t)
	out := runOK(t, map[string]string{"FLEET_DATABASE_URL": dst.URL}, "import", path)
	first, _, _ := strings.Cut(out, "\n")
	_, summary, _ := strings.Cut(first, path+": ")
	for _, s := range strings.Split(summary, "; ") {
		if !strings.HasSuffix(s, " 0 skipped") || strings.HasSuffix(s, ": 0 inserted, 0 skipped") && !strings.HasPrefix(s, "grants") {
			t.Errorf("import of the export: %s (of %s)", s, out)
		}
	}

	// acme is a customer under fleetco: a fresh installation has no
	// fleetco, so the file goes under one of its managers (--under) or at
	// the top (--top); without either it is refused, naming the manager.
	acme := filepath.Join(t.TempDir(), "acme.json")
	runOK(t, env, "tenant", "export", "--out", acme, "acme")
	fresh := map[string]string{"FLEET_DATABASE_URL": storagetest.New(t).URL}
	if r := runMain(t, fresh, "import", acme); r.code != exitFailure || !strings.Contains(r.stderr, `unknown manager "fleetco"`) {
		t.Errorf("import without a place: exit %d, %s", r.code, r.stderr)
	}
	if r := runMain(t, fresh, "import", "--under", "x", "--top", acme); r.code != exitUsage {
		t.Errorf("--under and --top: exit %d, %s", r.code, r.stderr)
	}
	if out := runOK(t, fresh, "import", "--top", acme); !strings.Contains(out, "accounts: 2 inserted") {
		t.Errorf("--top: %s", out)
	}
	under := storagetest.New(t)
	if _, err := under.ExecContext(t.Context(), `INSERT INTO accounts (username, email, type) VALUES ('reseller', '', 'manager')`); err != nil {
		t.Fatal(err)
	}
	if out := runOK(t, map[string]string{"FLEET_DATABASE_URL": under.URL}, "import", "--under", "reseller", acme); !strings.Contains(out, "accounts: 2 inserted") {
		t.Errorf("--under reseller: %s", out)
	}
	var manager string
	if err := under.NewRaw(`SELECT m.username FROM accounts a JOIN accounts m ON m.id = a.manager_id WHERE a.username = 'acme'`).Scan(t.Context(), &manager); err != nil || manager != "reseller" {
		t.Errorf("acme's manager after --under reseller: %q (%v)", manager, err)
	}

	if r := runMain(t, env, "tenant", "export", "nobody"); r.code != exitFailure || !strings.Contains(r.stderr, `account "nobody" not found`) {
		t.Errorf("unknown account: exit %d, %s", r.code, r.stderr)
	}
	if r := runMain(t, env, "tenant", "export"); r.code != exitUsage {
		t.Errorf("no account: exit %d, %s", r.code, r.stderr)
	}
	if r := runMain(t, env, "tenant", "export", "-h"); r.code != 0 || !strings.Contains(r.stdout, "usage: fleetapi tenant export") {
		t.Errorf("-h: exit %d, %s", r.code, r.stdout)
	}
}

// TestTenantErase runs `fleetapi tenant erase`: without --confirm it
// counts and changes nothing (exit 2); with it the subtree is gone; an
// admin and an unknown account are refused (exit 1).
func TestTenantErase(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL}
	runOK(t, env, "import", writeDemoFile(t))
	r := runMain(t, env, "tenant", "erase", "northwind")
	if r.code != exitUsage || !strings.Contains(r.stdout, "would erase northwind") || !strings.Contains(r.stderr, "--confirm") {
		t.Fatalf("without --confirm: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if out := runOK(t, env, "tenant", "export", "northwind"); !strings.Contains(out, `"username":"tailspin"`) {
		t.Fatal("the dry run changed the database")
	}
	r = runMain(t, env, "tenant", "erase", "northwind", "--confirm")
	if r.code != 0 || !strings.Contains(r.stdout, "erased northwind") {
		t.Fatalf("--confirm: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runMain(t, env, "tenant", "export", "tailspin"); r.code != exitFailure {
		t.Fatalf("tailspin after the erase: exit %d", r.code)
	}
	for _, who := range []string{"admin", "northwind"} {
		if r := runMain(t, env, "tenant", "erase", who, "--confirm"); r.code != exitFailure {
			t.Errorf("erase %s: exit %d %s", who, r.code, r.stderr)
		}
	}
}
