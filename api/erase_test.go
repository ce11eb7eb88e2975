package api_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestAccountErase: DELETE /accounts/{id} through one server erases the
// account's subtree and every token of it fails on the very next request
// on another server over the same database (its authentication cache
// included); the manager sees one account.erase event; and every bad
// request is a spec error, never a 500: one's own account, an admin,
// another tenant's id, a missing or erased id, a malformed id, a body, a
// query, no permission, read-only.
func TestAccountErase(t *testing.T) {
	a := newTestAPI(t)
	b := newReplica(t, a, nil, 0)
	acme, globexDay := a.accountID(t, "acme"), a.accountID(t, "globex-day")
	for _, tok := range []string{"acme-all", "acme-night-all", "globex-day-all"} {
		if r := b.get("/api/v2/me", demoToken(t, tok)); r.status != 200 {
			t.Fatalf("%s before: %d %s", tok, r.status, r.raw)
		}
	}
	mgr := demoToken(t, "fleetco-all")

	// Refused, nothing changes.
	for _, c := range []struct {
		name, token, path, body string
		status                  int
		code, reason            string
	}{
		{"own_account", "fleetco-all", fmt.Sprint("/api/v2/accounts/", a.accountID(t, "fleetco")), "", 403, "MANAGEMENT_DENIED", "own_account"},
		{"own_subaccount_account", "globex-day-all", fmt.Sprint("/api/v2/accounts/", globexDay), "", 403, "MANAGEMENT_DENIED", "own_account"},
		{"admin", "admin-all", fmt.Sprint("/api/v2/accounts/", a.accountID(t, "admin")), "", 403, "MANAGEMENT_DENIED", "wrong_target_type"},
		{"other_tenant", "northwind-all", fmt.Sprint("/api/v2/accounts/", acme), "", 404, "NOT_FOUND", ""},
		{"sibling", "tailspin-all", fmt.Sprint("/api/v2/accounts/", a.accountID(t, "contoso")), "", 404, "NOT_FOUND", ""},
		{"above", "acme-all", fmt.Sprint("/api/v2/accounts/", a.accountID(t, "fleetco")), "", 404, "NOT_FOUND", ""},
		{"missing", "admin-all", "/api/v2/accounts/999999", "", 404, "NOT_FOUND", ""},
		{"zero", "admin-all", "/api/v2/accounts/0", "", 400, "INVALID_PARAMETER", ""},
		{"not_a_number", "admin-all", "/api/v2/accounts/acme", "", 400, "INVALID_PARAMETER", ""},
		{"too_large", "admin-all", "/api/v2/accounts/99999999999999999999", "", 400, "INVALID_PARAMETER", ""},
		{"query", "fleetco-all", fmt.Sprint("/api/v2/accounts/", acme, "?cascade=true"), "", 400, "INVALID_PARAMETER", ""},
		{"body", "fleetco-all", fmt.Sprint("/api/v2/accounts/", acme), `{}`, 400, "INVALID_BODY", ""},
		{"no_permission", "globex-read", fmt.Sprint("/api/v2/accounts/", globexDay), "", 403, "TOKEN_PERMISSION_DENIED", ""},
		{"read_only", "umbrella-all", fmt.Sprint("/api/v2/accounts/", a.accountID(t, "umbrella")), "", 403, "READ_ONLY_ACCOUNT", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			audits := a.auditCount(t)
			denial(t, a.send("DELETE", c.path, demoToken(t, c.token), c.body), c.status, c.code, c.reason)
			if a.auditCount(t) != audits {
				t.Fatal("a refused erase wrote an audit row")
			}
		})
	}

	// The manager erases its user acme and acme's subaccount.
	if r := a.send("DELETE", fmt.Sprint("/api/v2/accounts/", acme), mgr, ""); r.status != 204 || len(r.raw) != 0 {
		t.Fatalf("erase: %d %s", r.status, r.raw)
	}
	for _, tok := range []string{"acme-all", "acme-night-all"} {
		denial(t, b.get("/api/v2/me", demoToken(t, tok)), 401, "INVALID_TOKEN", "")
		denial(t, a.get("/api/v2/me", demoToken(t, tok)), 401, "INVALID_TOKEN", "")
	}
	denial(t, a.get(fmt.Sprint("/api/v2/accounts/", acme), mgr), 404, "NOT_FOUND", "")
	denial(t, b.send("DELETE", fmt.Sprint("/api/v2/accounts/", acme), mgr, ""), 404, "NOT_FOUND", "")
	var left int
	if err := a.db.NewRaw(`SELECT (SELECT count(*) FROM accounts WHERE username IN ('acme', 'acme-night'))
		+ (SELECT count(*) FROM tokens WHERE name LIKE 'acme%') + (SELECT count(*) FROM objects WHERE account_id = ?)
		+ (SELECT count(*) FROM passengers WHERE account_id = ?)`, acme, acme).Scan(context.Background(), &left); err != nil || left != 0 {
		t.Fatalf("%d rows of acme left (%v)", left, err)
	}
	ev := a.get("/api/v2/audit-events?action=account.erase", mgr)
	items, _ := ev.body["data"].([]any)
	if len(items) != 1 {
		t.Fatalf("the manager's trail: %s", ev.raw)
	}
	e := items[0].(map[string]any)
	if e["target_id"] != float64(acme) || e["target_account_id"] != float64(a.accountID(t, "fleetco")) ||
		!strings.Contains(string(ev.raw), `"tokens":{"before":5,"after":0}`) || strings.Contains(string(ev.raw), "acme") {
		t.Fatalf("erase event: %s", ev.raw)
	}

	// A user erases its subaccount.
	globex := a.mintToken(t, "globex", "globex-star", []string{"*"}, nil, 0)
	if r := b.send("DELETE", fmt.Sprint("/api/v2/accounts/", globexDay), globex, ""); r.status != 204 {
		t.Fatalf("user erases its subaccount: %d %s", r.status, r.raw)
	}
	denial(t, a.get("/api/v2/me", demoToken(t, "globex-day-all")), 401, "INVALID_TOKEN", "")
	if r := b.get("/api/v2/me", globex); r.status != 200 {
		t.Fatalf("the user itself after erasing its subaccount: %d", r.status)
	}
}

// TestAccountEraseConcurrentCreates erases a user while its manager keeps
// creating subaccounts, devices and tokens under it on two servers: every
// answer is a spec answer (201, or 404 once the user is gone; never a
// 5xx), and no row is left that names an erased account.
func TestAccountEraseConcurrentCreates(t *testing.T) {
	a := newTestAPI(t)
	b := newReplica(t, a, nil, 0)
	mgr := demoToken(t, "fleetco-all")
	user := a.send("POST", "/api/v2/accounts", mgr, fmt.Sprintf(`{"username":"conc","type":"user","manager_id":%d}`, a.accountID(t, "fleetco")))
	if user.status != 201 {
		t.Fatalf("create: %d %s", user.status, user.raw)
	}
	id := int64(user.body["data"].(map[string]any)["id"].(float64))
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	started := make(chan struct{}) // closed once six creates have succeeded
	var once sync.Once
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := a
			if w%2 == 1 {
				srv = b
			}
			for i := range 8 {
				var r response
				switch (w + i) % 3 {
				case 0:
					r = srv.send("POST", "/api/v2/accounts", mgr, fmt.Sprintf(`{"username":"conc-%d-%d","type":"subaccount","manager_id":%d}`, w, i, id))
				case 1:
					r = srv.send("POST", "/api/v2/objects", mgr, fmt.Sprintf(`{"imei":"conc-%d-%d","name":"x","account_id":%d}`, w, i, id))
				default:
					r = srv.send("POST", "/api/v2/tokens", mgr, fmt.Sprintf(`{"account_id":%d,"name":"conc-%d-%d","permissions":["GET /me"]}`, id, w, i))
				}
				mu.Lock()
				statuses[r.status]++
				if statuses[201] >= 6 {
					once.Do(func() { close(started) })
				}
				mu.Unlock()
				if r.status != 201 && r.status != 404 {
					t.Errorf("create during an erase: %d %s", r.status, r.raw)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-started
		if r := a.send("DELETE", fmt.Sprint("/api/v2/accounts/", id), mgr, ""); r.status != 204 {
			t.Errorf("erase: %d %s", r.status, r.raw)
		}
	}()
	wg.Wait()
	t.Logf("answers to the creates: %v", statuses)
	if statuses[201] < 6 || statuses[404] == 0 {
		t.Errorf("answers %v: the erase did not run amid the creates", statuses)
	}
	var left int
	if err := a.db.NewRaw(`SELECT (SELECT count(*) FROM accounts WHERE username LIKE 'conc%')
		+ (SELECT count(*) FROM objects WHERE imei LIKE 'conc-%') + (SELECT count(*) FROM tokens WHERE name LIKE 'conc-%')
		+ (SELECT count(*) FROM account_row_counts WHERE account_id NOT IN (SELECT id FROM accounts))`).Scan(context.Background(), &left); err != nil || left != 0 {
		t.Fatalf("%d rows of the erased user left (%v)", left, err)
	}
}
