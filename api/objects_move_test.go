package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
)

// objectID returns the id of a demo device.
func (a *testAPI) objectID(t *testing.T, imei string) int64 {
	t.Helper()
	var id int64
	if err := a.db.NewRaw("SELECT id FROM objects WHERE imei = ?", imei).Scan(context.Background(), &id); err != nil {
		t.Fatalf("device %s: %v", imei, err)
	}
	return id
}

// TestIMEIConflictRevealsNothing: an IMEI is one physical device, unique
// on the platform (issue 19 item 15). Registering one that exists is 409
// CONFLICT with the very same body whoever holds it — the caller itself,
// another tenant, one under another manager — naming no account, and it
// writes nothing.
func TestIMEIConflictRevealsNothing(t *testing.T) {
	a := newTestAPI(t)
	acme := a.accountID(t, "acme")
	before := a.auditCount(t)
	var first []byte
	for _, imei := range []string{"356938035643809", "861073032104551", "865231041152302", "865231041152328"} { // acme's, globex's, tailspin's, contoso's
		r := a.send(http.MethodPost, "/api/v2/objects", demoToken(t, "acme-all"), fmt.Sprintf(`{"imei":%q,"account_id":%d}`, imei, acme))
		denial(t, r, http.StatusConflict, "CONFLICT", "")
		body := withoutRequestID(r)
		if first == nil {
			first = body
		} else if !bytes.Equal(body, first) {
			t.Fatalf("IMEI %s: answer %s differs from %s", imei, body, first)
		}
		for _, leak := range []string{"tailspin", "globex", "contoso", "northwind", "account_id"} {
			if bytes.Contains(r.raw, []byte(leak)) {
				t.Fatalf("IMEI %s: the 409 names %q: %s", imei, leak, r.raw)
			}
		}
	}
	if a.auditCount(t) != before {
		t.Fatal("a refused registration stored an audit row")
	}
}

// TestObjectMove: PATCH /objects/{id} moves a device between accounts
// (object.move), the admin across tenants, a manager within its own
// accounts; the device's grants to the old owner's subaccounts go with the
// old owner; the move is audited; anything outside the caller's
// management scope is 404, a subaccount as new owner 403
// wrong_target_type, and a refused move changes nothing.
func TestObjectMove(t *testing.T) {
	a := newTestAPI(t)
	acme, globex, tailspin, night := a.accountID(t, "acme"), a.accountID(t, "globex"), a.accountID(t, "tailspin"), a.accountID(t, "acme-night")
	truck := a.objectID(t, "356938035643809") // acme's, granted to acme-night
	bus := a.objectID(t, "865231041152302")   // tailspin's (northwind's tenant)
	path := func(id int64) string { return fmt.Sprintf("/api/v2/objects/%d", id) }
	move := func(token string, id, to int64) response {
		return a.send(http.MethodPatch, path(id), demoToken(t, token), fmt.Sprintf(`{"account_id":%d}`, to))
	}
	owner := func(id int64) int64 {
		var o int64
		if err := a.db.NewRaw("SELECT account_id FROM objects WHERE id = ?", id).Scan(context.Background(), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	before := a.auditCount(t)
	refused := []struct {
		name, token string
		id, to      int64
		status      int
		code        string
		reason      string
	}{
		{"a manager, to another tenant", "fleetco-all", truck, tailspin, 404, "NOT_FOUND", ""},
		{"a manager, another tenant's device", "fleetco-all", bus, acme, 404, "NOT_FOUND", ""},
		{"a user, to its sibling", "acme-all", truck, globex, 404, "NOT_FOUND", ""},
		{"a user, a sibling's device", "acme-all", a.objectID(t, "861073032104551"), acme, 404, "NOT_FOUND", ""},
		{"a missing device", "admin-all", 987654321, acme, 404, "NOT_FOUND", ""},
		{"a missing account", "admin-all", truck, 987654321, 404, "NOT_FOUND", ""},
		{"to a subaccount", "admin-all", truck, night, 403, "MANAGEMENT_DENIED", "wrong_target_type"},
		{"a subaccount", "acme-night-all", truck, night, 404, "NOT_FOUND", ""},
		{"read-only", "umbrella-all", a.objectID(t, "352091087600121"), a.accountID(t, "umbrella"), 403, "READ_ONLY_ACCOUNT", ""},
		{"no permission", "globex-read", a.objectID(t, "861073032104551"), globex, 403, "TOKEN_PERMISSION_DENIED", ""},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) { denial(t, move(c.token, c.id, c.to), c.status, c.code, c.reason) })
	}
	denial(t, a.send(http.MethodPatch, path(truck), demoToken(t, "admin-all"), `{}`), 400, "VALIDATION_FAILED", "")
	denial(t, a.send(http.MethodPatch, path(truck), demoToken(t, "admin-all"), `{"account_id":null}`), 400, "VALIDATION_FAILED", "")
	denial(t, a.send(http.MethodPatch, path(truck), demoToken(t, "admin-all"), `{"account_id":0}`), 400, "VALIDATION_FAILED", "")
	denial(t, a.send(http.MethodPatch, path(truck), demoToken(t, "admin-all"), `{"account_id":1,"imei":"x"}`), 400, "INVALID_BODY", "")
	if owner(truck) != acme || owner(bus) != tailspin || a.auditCount(t) != before {
		t.Fatal("a refused move changed something")
	}
	if len(a.grantsOf(t, night)) != 1 {
		t.Fatalf("acme-night's grants %v before the move", a.grantsOf(t, night))
	}

	services := a.count(t, "SELECT count(*) FROM services WHERE imei = '356938035643809' AND account_id = ?", acme)
	if services == 0 {
		t.Fatal("the demo truck has no services")
	}
	// The manager moves a device between two of its customers.
	r := move("fleetco-all", truck, globex)
	if r.status != http.StatusOK || r.data(t)["account_id"] != float64(globex) || r.data(t)["imei"] != "356938035643809" {
		t.Fatalf("move: %d %s", r.status, r.raw)
	}
	if owner(truck) != globex || len(a.grantsOf(t, night)) != 0 {
		t.Fatalf("after the move: owner %d, acme-night's grants %v", owner(truck), a.grantsOf(t, night))
	}
	// Its maintenance services follow it (they belong to the device's owner).
	if n := a.count(t, "SELECT count(*) FROM services WHERE imei = '356938035643809' AND account_id = ?", globex); n != services {
		t.Fatalf("%d of %d services moved with the device", n, services)
	}
	// The exact totals (row counters) follow too.
	for tok, owner := range map[string]int64{"acme-all": acme, "globex-read": globex} {
		for _, res := range []struct{ path, table string }{{"/api/v2/services", "services"}, {"/api/v2/objects", "objects"}} {
			_, meta := a.list(t, res.path, demoToken(t, tok))
			if want := a.count(t, "SELECT count(*) FROM "+res.table+" WHERE account_id = ?", owner); int(meta["total"].(float64)) != want {
				t.Fatalf("%s of %s: total %v, want %d", res.path, tok, meta["total"], want)
			}
		}
	}
	ev := a.lastAudit(t)
	if ev["action"] != "object.move" || ev["target_account_id"] != float64(globex) || ev["target_id"] != float64(truck) {
		t.Fatalf("audit %v", ev)
	}
	changes := ev["changes"].(map[string]any)
	if ch := changes["account_id"].(map[string]any); ch["before"] != float64(acme) || ch["after"] != float64(globex) {
		t.Fatalf("audit changes %v", changes)
	}
	if ch := changes["granted_to"].(map[string]any); fmt.Sprint(ch["before"]) != fmt.Sprintf("[%d]", night) {
		t.Fatalf("audit changes %v", changes)
	}
	// The old owner no longer sees it; the new one does.
	if items, _ := a.list(t, "/api/v2/objects?imei=356938035643809", demoToken(t, "acme-all")); len(items) != 0 {
		t.Fatalf("acme still sees the device: %v", items)
	}
	if items, _ := a.list(t, "/api/v2/objects?imei=356938035643809", demoToken(t, "globex-read")); len(items) != 1 {
		t.Fatalf("globex does not see the device: %v", items)
	}
	// The admin moves a device across tenants.
	if r := move("admin-all", bus, acme); r.status != http.StatusOK || owner(bus) != acme {
		t.Fatalf("admin move: %d %s", r.status, r.raw)
	}
	if n := a.auditCount(t); n != before+2 {
		t.Fatalf("%d audit rows, want %d", n, before+2)
	}
}
