package api_test

import (
	"fmt"
	"net/http"
	"testing"
)

// managementReason is details.reason of a MANAGEMENT_DENIED response.
func managementReason(t *testing.T, r response) string {
	t.Helper()
	if r.status != http.StatusForbidden || r.errorCode(t) != "MANAGEMENT_DENIED" {
		return ""
	}
	e, _ := r.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	reason, _ := d["reason"].(string)
	return reason
}

// TestNestedManagerAttack reproduces issue 19's first finding and checks
// both lines that now close it. The attack: an admin creates a manager
// under a manager; the parent manager mints a "*" token for the
// sub-manager and with it reads, writes and mints as the sub-manager's
// customers, which its own token cannot see.
//
// First line (docs/design.md §2, fixed levels): the admin cannot create the
// nested manager (403 not_below_caller), and the database refuses the
// shape whoever writes it. Second line (docs/design.md §9): in a database that
// still holds the shape (written with the trigger disabled, as before the
// migration), the parent manager cannot mint a token for the sub-manager
// (403 outside_scope), while it still mints for its own customer.
func TestNestedManagerAttack(t *testing.T) {
	a := newTestAPI(t)
	admin := demoToken(t, "admin-all")
	create := func(token, username, typ string, manager int64) response {
		t.Helper()
		body := fmt.Sprintf(`{"username":%q,"email":"ops@example.com","type":%q`, username, typ)
		if manager != 0 {
			body += fmt.Sprintf(`,"manager_id":%d`, manager)
		}
		return a.send(http.MethodPost, "/api/v2/accounts", token, body+"}")
	}
	r := create(admin, "reseller-a", "manager", 0)
	if r.status != http.StatusCreated {
		t.Fatalf("admin creates a manager at the top: %d %s", r.status, r.raw)
	}
	parent := a.accountID(t, "reseller-a")
	r = create(admin, "reseller-b", "manager", parent)
	if reason := managementReason(t, r); reason != "not_below_caller" {
		t.Fatalf("admin creates a manager under a manager: %d %s, want 403 not_below_caller", r.status, r.raw)
	}
	if n := a.count(t, "SELECT count(*) FROM accounts WHERE username = 'reseller-b'"); n != 0 {
		t.Fatalf("the refused manager was stored")
	}
	// the allowed places of a manager and a user an admin creates
	adminID := a.accountID(t, "admin")
	for _, c := range []struct {
		name, typ string
		under     int64
	}{{"reseller-b", "manager", adminID}, {"customer-a", "user", parent}, {"customer-top", "user", 0}, {"customer-admin", "user", adminID}} {
		if r := create(admin, c.name, c.typ, c.under); r.status != http.StatusCreated {
			t.Fatalf("admin creates %s %s under %d: %d %s", c.typ, c.name, c.under, r.status, r.raw)
		}
	}
	sub := a.accountID(t, "reseller-b")
	// the database refuses the shape too
	if _, err := a.db.ExecContext(t.Context(), "UPDATE accounts SET manager_id = ? WHERE id = ?", parent, sub); err == nil {
		t.Fatal("the database moved a manager under a manager")
	}

	// a database that already held the shape: the second line
	a.exec(t, "ALTER TABLE accounts DISABLE TRIGGER accounts_fixed_levels")
	a.exec(t, "UPDATE accounts SET manager_id = ? WHERE id = ?", parent, sub)
	a.exec(t, "INSERT INTO accounts (username, type, manager_id) VALUES ('victim-customer', 'user', ?)", sub)
	a.exec(t, "ALTER TABLE accounts ENABLE TRIGGER accounts_fixed_levels")
	victim := a.accountID(t, "victim-customer")
	parentToken := a.mintToken(t, "reseller-a", "all", []string{"*"}, nil, 0)
	if r := a.get(fmt.Sprintf("/api/v2/accounts/%d", victim), parentToken); r.status != http.StatusNotFound {
		t.Fatalf("the parent manager sees the sub-manager's customer: %d %s", r.status, r.raw)
	}
	before := a.tokenCount(t)
	r = a.send(http.MethodPost, "/api/v2/tokens", parentToken, fmt.Sprintf(`{"account_id":%d,"name":"takeover","permissions":["*"]}`, sub))
	if reason := managementReason(t, r); reason != "outside_scope" {
		t.Fatalf("parent manager mints a * token for the sub-manager: %d %s, want 403 outside_scope", r.status, r.raw)
	}
	if a.tokenCount(t) != before {
		t.Fatal("the refused token was stored")
	}
	// the victim's account cannot be reached by another path either
	r = a.send(http.MethodPost, "/api/v2/tokens", parentToken, fmt.Sprintf(`{"account_id":%d,"name":"takeover","permissions":["*"]}`, victim))
	if r.status != http.StatusNotFound {
		t.Fatalf("parent manager mints for the sub-manager's customer: %d %s, want 404", r.status, r.raw)
	}
	// the parent manager still mints for its own customer and itself
	customer := a.accountID(t, "customer-a")
	for _, id := range []int64{customer, parent} {
		r = a.send(http.MethodPost, "/api/v2/tokens", parentToken, fmt.Sprintf(`{"account_id":%d,"name":"ok-%d","permissions":["GET *"]}`, id, id))
		if r.status != http.StatusCreated {
			t.Fatalf("parent manager mints for account %d: %d %s", id, r.status, r.raw)
		}
	}
}

// TestIncompleteChainDenied (docs/design.md §2, issue 19 item 3): a chain of
// accounts that cannot be loaded whole, written behind the database's
// back (a loop of manager links, more accounts above than the fixed
// levels allow, with an inactive account far up), reaches the policy
// marked incomplete and every request of its tokens is denied (401
// ACCOUNT_INACTIVE), however active the accounts it could load are.
func TestIncompleteChainDenied(t *testing.T) {
	a := newTestAPI(t)
	a.exec(t, "ALTER TABLE accounts DISABLE TRIGGER accounts_fixed_levels")
	// ten users, each under the previous; the topmost is inactive, beyond
	// what an eight-account walk used to see
	a.exec(t, "INSERT INTO accounts (username, type, active) VALUES ('deep00', 'user', false)")
	for i := 1; i < 10; i++ {
		a.exec(t, "INSERT INTO accounts (username, type, manager_id) SELECT ?, 'user', id FROM accounts WHERE username = ?",
			fmt.Sprintf("deep%02d", i), fmt.Sprintf("deep%02d", i-1))
	}
	// a loop: loop-a → loop-b → loop-a, every account active
	a.exec(t, "INSERT INTO accounts (username, type) VALUES ('loop-a', 'user')")
	a.exec(t, "INSERT INTO accounts (username, type, manager_id) SELECT 'loop-b', 'user', id FROM accounts WHERE username = 'loop-a'")
	a.exec(t, "UPDATE accounts SET manager_id = (SELECT id FROM accounts WHERE username = 'loop-b') WHERE username = 'loop-a'")
	for _, user := range []string{"deep09", "deep05", "deep04", "loop-a"} {
		token := a.mintToken(t, user, "t", []string{"*"}, nil, 0)
		for _, path := range []string{"/api/v2/me", "/api/v2/services"} {
			r := a.get(path, token)
			if r.status != http.StatusUnauthorized || r.errorCode(t) != "ACCOUNT_INACTIVE" {
				t.Errorf("%s GET %s: %d %s, want 401 ACCOUNT_INACTIVE", user, path, r.status, r.raw)
			}
		}
	}
	// three accounts above, all active: within the fixed levels' depth
	a.exec(t, "UPDATE accounts SET active = true WHERE username = 'deep00'")
	token := a.mintToken(t, "deep03", "t", []string{"*"}, nil, 0)
	if r := a.get("/api/v2/me", token); r.status != http.StatusOK {
		t.Errorf("deep03, three active accounts above: %d %s, want 200", r.status, r.raw)
	}
}
