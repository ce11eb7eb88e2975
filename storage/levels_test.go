package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// TestFixedLevelsInDatabase: the database refuses every shape outside the
// fixed levels of docs/design.md §2 (admin → manager → user → subaccount; a
// manager at the top or under an admin; a user at the top or under a
// manager or an admin; a subaccount under a user), on insert, on a move
// (manager_id) and on a change of type, whoever writes; and it accepts
// every allowed shape.
func TestFixedLevelsInDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newStore(t)
	exec := func(q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	add := func(name, typ, manager string) error {
		if manager == "" {
			return exec("INSERT INTO accounts (username, type) VALUES (?, ?)", name, typ)
		}
		return exec("INSERT INTO accounts (username, type, manager_id) SELECT ?, ?, id FROM accounts WHERE username = ?", name, typ, manager)
	}
	// the allowed shapes
	for _, a := range [][3]string{
		{"lv-admin", "admin", ""}, {"lv-m-top", "manager", ""}, {"lv-m", "manager", "lv-admin"},
		{"lv-u-top", "user", ""}, {"lv-u-admin", "user", "lv-admin"}, {"lv-u", "user", "lv-m"}, {"lv-u2", "user", "lv-m-top"},
		{"lv-s", "subaccount", "lv-u"}, {"lv-s2", "subaccount", "lv-u-top"},
	} {
		if err := add(a[0], a[1], a[2]); err != nil {
			t.Fatalf("%s %s under %q: %v", a[1], a[0], a[2], err)
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		var inv *storage.InvalidError
		if err == nil {
			t.Errorf("%s: accepted", what)
		} else if !errors.As(storage.Translate(err), &inv) || inv.SQLState != "23514" {
			t.Errorf("%s: %v, want a check_violation (ErrInvalid)", what, err)
		}
	}
	// every other parent of each type
	for _, a := range [][3]string{
		{"x1", "manager", "lv-m"}, {"x2", "manager", "lv-m-top"}, {"x3", "manager", "lv-u"}, {"x4", "manager", "lv-s"},
		{"x5", "user", "lv-u"}, {"x6", "user", "lv-s"},
		{"x7", "subaccount", "lv-admin"}, {"x8", "subaccount", "lv-m"}, {"x9", "subaccount", "lv-s"},
	} {
		refused(a[1]+" under "+a[2], add(a[0], a[1], a[2]))
	}
	// a move under a wrong parent, and a change of type that breaks the
	// level of the account itself or of the accounts below it
	refused("manager moved under a manager", exec("UPDATE accounts SET manager_id = (SELECT id FROM accounts WHERE username = 'lv-m-top') WHERE username = 'lv-m'"))
	refused("user under a manager turned into a manager", exec("UPDATE accounts SET type = 'manager' WHERE username = 'lv-u'"))
	refused("manager with users turned into a user", exec("UPDATE accounts SET type = 'user' WHERE username = 'lv-m-top'"))
	refused("user with subaccounts turned into a manager", exec("UPDATE accounts SET type = 'manager' WHERE username = 'lv-u-top'"))
	// a change that keeps the levels is fine
	if err := exec("UPDATE accounts SET manager_id = NULL WHERE username = 'lv-m'"); err != nil {
		t.Errorf("manager moved to the top: %v", err)
	}
	if err := exec("UPDATE accounts SET type = 'manager' WHERE username = 'lv-u-admin'"); err != nil {
		t.Errorf("user under an admin, without subaccounts, turned into a manager: %v", err)
	}
	var n int
	if err := db.NewRaw("SELECT count(*) FROM accounts WHERE username LIKE 'x%'").Scan(ctx, &n); err != nil || n != 0 {
		t.Errorf("%d refused accounts stored (%v)", n, err)
	}
}

// TestFixedLevelsMigrationRefusesNestedManagers: the migration that adds
// the fixed levels refuses a database that holds another shape (the
// nested managers docs/design.md §9's old wording allowed), naming every such
// account, and changes nothing; once they are moved it applies.
func TestFixedLevelsMigrationRefusesNestedManagers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, exec, up := migrationReplay(t, "20261220000001_fixed_levels")
	for _, q := range []string{
		"INSERT INTO accounts (username, type) VALUES ('old-parent', 'manager')",
		"INSERT INTO accounts (username, type, manager_id) SELECT 'old-nested', 'manager', id FROM accounts WHERE username = 'old-parent'",
		"INSERT INTO accounts (username, type, manager_id) SELECT 'old-customer', 'user', id FROM accounts WHERE username = 'old-nested'",
		"INSERT INTO accounts (username, type, manager_id) SELECT 'old-sub', 'subaccount', id FROM accounts WHERE username = 'old-parent'",
	} {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	err := exec(up)
	if err == nil {
		t.Fatal("the migration applied to a tree with a manager under a manager")
	}
	msg := err.Error()
	for _, want := range []string{"manager old-nested (id ", "under manager old-parent", "subaccount old-sub (id "} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not name %q", msg, want)
		}
	}
	if strings.Contains(msg, "old-customer") {
		t.Errorf("message %q names old-customer, a user under a manager (allowed)", msg)
	}
	var triggers int
	if err := db.NewRaw("SELECT count(*) FROM pg_trigger WHERE tgname = 'accounts_fixed_levels'").Scan(ctx, &triggers); err != nil || triggers != 0 {
		t.Fatalf("after the refusal: %d triggers (%v), want none: the refused migration changed something", triggers, err)
	}
	// moved by the operator: the migration applies, and holds
	if err := exec("UPDATE accounts SET manager_id = NULL WHERE username = 'old-nested'"); err != nil {
		t.Fatal(err)
	}
	if err := exec("UPDATE accounts SET manager_id = (SELECT id FROM accounts WHERE username = 'old-customer') WHERE username = 'old-sub'"); err != nil {
		t.Fatal(err)
	}
	if err := exec(up); err != nil {
		t.Fatalf("after the move: %v", err)
	}
	if err := exec("UPDATE accounts SET manager_id = (SELECT id FROM accounts WHERE username = 'old-parent') WHERE username = 'old-nested'"); err == nil {
		t.Error("after the migration, a manager could be moved under a manager")
	}
}
