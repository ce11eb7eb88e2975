package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/fleetapi/fleetapi/api"
)

// treeLevel is one account of the demo branch admin → fleetco → acme →
// acme-night, with a token that grants everything.
type treeLevel struct {
	username, token string
	id              int64
}

// demoBranch returns the demo branch, top first, with the account ids.
func demoBranch(t *testing.T, a *testAPI) []treeLevel {
	t.Helper()
	levels := []treeLevel{
		{username: "admin", token: "admin-all"},
		{username: "fleetco", token: "fleetco-all"},
		{username: "acme", token: "acme-all"},
		{username: "acme-night", token: "acme-night-all"},
	}
	for i := range levels {
		acct, err := a.store.AccountByUsername(context.Background(), levels[i].username)
		if err != nil {
			t.Fatal(err)
		}
		levels[i].id = acct.ID
		levels[i].token = demoToken(t, levels[i].token)
	}
	return levels
}

// accountState is a state of one account that docs/design.md §2 passes down the
// tree, as the SQL that sets it.
type accountState struct {
	name, set string
	// code is the 401 of the account and every account below it; empty
	// for read-only, which still reads but gets 403 READ_ONLY_ACCOUNT on
	// write routes.
	code string
}

var accountStates = []accountState{
	{"inactive", "active = false", "ACCOUNT_INACTIVE"},
	{"expired", "account_expire = true, account_expire_dt = '2000-01-01'", "ACCOUNT_EXPIRED"},
	{"read_only", "read_only = true", ""},
}

const resetState = "active = true, account_expire = false, account_expire_dt = NULL, read_only = false"

// detailsAccount returns details.account_id of an error response.
func detailsAccount(r response) any {
	e, _ := r.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d["account_id"]
}

// expectUsable checks that token can read /me with the given effective
// read_only and that a write succeeds or is refused as read-only, naming
// the account that made it read-only.
func expectUsable(t *testing.T, a *testAPI, token string, readOnlyBy int64) {
	t.Helper()
	me := a.get("/api/v2/me", token)
	if me.status != http.StatusOK {
		t.Fatalf("GET /me: %d %s", me.status, me.raw)
	}
	perms, _ := me.data(t)["permissions"].(map[string]any)
	routes, _ := perms["routes"].(map[string]any)
	if perms["read_only"] != (readOnlyBy != 0) || routes["POST /passengers"] != (readOnlyBy == 0) {
		t.Errorf("GET /me permissions %v, want read_only %t", perms, readOnlyBy != 0)
	}
	if res := a.get("/api/v2/services", token); res.status != http.StatusOK {
		t.Errorf("GET /services: %d %s", res.status, res.raw)
	}
	res := a.post(`{"passenger_name":"Tree walker"}`, token)
	switch {
	case readOnlyBy == 0 && res.status != http.StatusCreated:
		t.Errorf("POST /passengers: %d %s, want 201", res.status, res.raw)
	case readOnlyBy != 0 && (res.status != http.StatusForbidden || res.errorCode(t) != "READ_ONLY_ACCOUNT" ||
		detailsAccount(res) != float64(readOnlyBy)):
		t.Errorf("POST /passengers: %d %s, want 403 READ_ONLY_ACCOUNT naming account %d", res.status, res.raw, readOnlyBy)
	}
}

// expectLockedOut checks that every route answers 401 code naming account by.
func expectLockedOut(t *testing.T, a *testAPI, token, code string, by int64) {
	t.Helper()
	for _, r := range []response{
		a.get("/api/v2/me", token),
		a.get("/api/v2/services", token),
		a.post(`{"passenger_name":"Tree walker"}`, token),
	} {
		if r.status != http.StatusUnauthorized || r.errorCode(t) != code || detailsAccount(r) != float64(by) {
			t.Errorf("%d %s, want 401 %s naming account %d", r.status, r.raw, code, by)
		}
	}
}

// TestStateFlowsDownTree enumerates docs/design.md §2's "state flows down the
// tree" through the real API: each state (inactive, expired, read-only) set
// on each account of the branch admin → manager → user → subaccount, seen
// by that account and every account below it; admins aside. Clearing the
// state restores access on the very next request (no cached principal or
// decision survives it).
func TestStateFlowsDownTree(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.AuthFailureLimit = 1 << 20 })
	branch := demoBranch(t, a)
	for at, holder := range branch[:3] {
		for _, st := range accountStates {
			t.Run(fmt.Sprintf("%s_%s", holder.username, st.name), func(t *testing.T) {
				// before: the whole branch is usable (this also fills the decision cache)
				for _, l := range branch {
					expectUsable(t, a, l.token, 0)
				}
				a.exec(t, "UPDATE accounts SET "+st.set+" WHERE id = ?", holder.id)
				for _, l := range branch[at:] {
					switch {
					case at == 0 && l.id != holder.id:
						// admins aside: an admin passes nothing down
						expectUsable(t, a, l.token, 0)
					case st.code != "":
						expectLockedOut(t, a, l.token, st.code, holder.id)
					default:
						expectUsable(t, a, l.token, holder.id)
					}
				}
				for _, l := range branch[:at] {
					expectUsable(t, a, l.token, 0) // state does not flow up
				}
				a.exec(t, "UPDATE accounts SET "+resetState+" WHERE id = ?", holder.id)
				for _, l := range branch {
					expectUsable(t, a, l.token, 0)
				}
			})
		}
	}
	t.Run("nearest_account_named", func(t *testing.T) {
		manager, user, sub := branch[1], branch[2], branch[3]
		a.exec(t, "UPDATE accounts SET read_only = true, account_expire = true, account_expire_dt = '2000-01-01' WHERE id = ?", manager.id)
		a.exec(t, "UPDATE accounts SET read_only = true, active = false WHERE id = ?", user.id)
		expectLockedOut(t, a, sub.token, "ACCOUNT_INACTIVE", user.id)
		a.exec(t, "UPDATE accounts SET active = true WHERE id = ?", user.id)
		expectLockedOut(t, a, sub.token, "ACCOUNT_EXPIRED", manager.id)
		a.exec(t, "UPDATE accounts SET account_expire = false WHERE id = ?", manager.id)
		expectUsable(t, a, sub.token, user.id)
		a.exec(t, "UPDATE accounts SET read_only = false WHERE id = ?", user.id)
		expectUsable(t, a, sub.token, manager.id)
		a.exec(t, "UPDATE accounts SET "+resetState+" WHERE id IN (?, ?)", manager.id, user.id)
		expectUsable(t, a, sub.token, 0)
	})
}
