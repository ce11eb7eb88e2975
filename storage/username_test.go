package storage_test

import (
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// TestValidUsername: the grammar of docs/design.md §9.
func TestValidUsername(t *testing.T) {
	for _, u := range []string{"ab", "acme", "acme-night", "a.b_c-d", "A1", strings.Repeat("x", 64)} {
		if err := storage.ValidUsername(u); err != nil {
			t.Errorf("%q: %v", u, err)
		}
	}
	for _, u := range []string{"", "a", "acme.", ".acme", "-acme", "acme_", "ac me", "acme@x", "аcme", "ａcme", "acmé",
		"acme\u0301", strings.Repeat("x", 65), "acme\n"} {
		if err := storage.ValidUsername(u); err == nil || !strings.Contains(err.Error(), storage.UsernameRule) {
			t.Errorf("%q: %v, want the rule", u, err)
		}
	}
}

// TestUsernameMigrationRefusesCollisions: the migration that makes
// usernames unique whatever the case refuses a database holding
// usernames that collide, naming every group, and changes nothing; once
// they are renamed it applies.
func TestUsernameMigrationRefusesCollisions(t *testing.T) {
	t.Parallel()
	_, exec, up := migrationReplay(t, "20261220000002_username_folded")
	if err := exec("INSERT INTO accounts (username, type) VALUES ('admin', 'admin'), ('Admin', 'user'), ('ADMIN', 'user'), ('acme', 'user'), ('Acme', 'user'), ('fine', 'user')"); err != nil {
		t.Fatal(err)
	}
	err := exec(up)
	if err == nil {
		t.Fatal("the migration applied to colliding usernames")
	}
	for _, want := range []string{"admin (id ", "Admin (id ", "ADMIN (id ", "acme (id ", "Acme (id "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "fine") {
		t.Errorf("message %q names an account that collides with none", err)
	}
	if err := exec("UPDATE accounts SET username = username || '-' || id WHERE username IN ('Admin', 'ADMIN', 'Acme')"); err != nil {
		t.Fatal(err)
	}
	if err := exec(up); err != nil {
		t.Fatalf("after the renames: %v", err)
	}
	if err := exec("INSERT INTO accounts (username, type) VALUES ('FINE', 'user')"); err == nil {
		t.Error("after the migration, FINE was stored beside fine")
	}
}
