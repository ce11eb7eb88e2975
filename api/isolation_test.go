package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// owners maps each row id of a resource to the username owning it.
func (a *testAPI) owners(t *testing.T, table, id string) map[float64]string {
	t.Helper()
	var rows []struct {
		ID       int64  `bun:"id"`
		Username string `bun:"username"`
	}
	q := fmt.Sprintf(`SELECT r.%s AS id, acc.username FROM %s AS r JOIN accounts AS acc ON acc.id = r.account_id`, id, table)
	if err := a.db.NewRaw(q).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[float64]string{}
	for _, r := range rows {
		out[float64(r.ID)] = r.Username
	}
	return out
}

// privilegeCombinations are the subaccounts' privilege sets that the
// isolation test covers: none, each privilege alone, both.
var privilegeCombinations = []struct {
	name       string
	privileges []string
}{
	{"none", []string{}},
	{"reports", []string{"reports"}},
	{"events", []string{"event_notifications"}},
	{"both", []string{"reports", "event_notifications"}},
}

// privilegeSubaccounts makes, under the user parent, one subaccount for
// each privilege combination (acme-priv-<combination>), each granted
// every device of parent, with a token of every permission. It returns the
// tokens by combination and parent's devices. A subaccount may call a
// list route only with the privilege the route needs (authz.rego,
// route_privilege; else 403 PRIVILEGE_REQUIRED), and then sees the
// parent's rows whose every device is granted to it: a scope rule that
// asks for another privilege (reports' holds("reports") copied into a new
// rule) hides them from one of the four and fails the test.
func (a *testAPI) privilegeSubaccounts(t *testing.T, parent string) (map[string]string, map[string]bool) {
	t.Helper()
	ctx := context.Background()
	parentID := a.accountID(t, parent)
	var devices []string
	if err := a.db.NewSelect().Model((*storage.Object)(nil)).Column("imei").Where("account_id = ?", parentID).Scan(ctx, &devices); err != nil {
		t.Fatal(err)
	}
	if len(devices) == 0 {
		t.Fatalf("%s owns no device to grant", parent)
	}
	tokens := map[string]string{}
	for _, c := range privilegeCombinations {
		combination, privileges := c.name, c.privileges
		username := parent + "-priv-" + combination
		sub := &storage.Account{Username: username, Email: username + "@example.com", Type: tenancy.Subaccount,
			ManagerID: &parentID, Active: true, Privileges: privileges}
		if _, err := a.db.NewInsert().Model(sub).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for _, d := range devices {
			if _, err := a.db.NewInsert().Model(&storage.ObjectGrant{SubaccountID: sub.ID, IMEI: d}).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		tokens[combination] = a.mintToken(t, username, "all", []string{"*"}, nil, 0)
	}
	owned := map[string]bool{}
	for _, d := range devices {
		owned[d] = true
	}
	return tokens, owned
}

// namesOnly reports whether every device an item names (its imei, one or
// a list) is in devices; an item naming none does.
func namesOnly(item map[string]any, devices map[string]bool) bool {
	switch imei := item["imei"].(type) {
	case string:
		return devices[imei]
	case []any:
		for _, d := range imei {
			if s, ok := d.(string); !ok || !devices[s] {
				return false
			}
		}
	}
	return true
}

// TestListIsolation checks, for every account type, that a list holds
// exactly the rows the tenancy model of docs/design.md §2 allows, and that search
// and filters cannot widen it. Subaccounts: acme-night (one device of
// acme granted, the reports privilege) and one subaccount of acme for each
// privilege combination (every device of acme granted), which sees its
// granted rows of every list route it may call (privilegeSubaccounts).
func TestListIsolation(t *testing.T) {
	a := newTestAPI(t)
	tenant1 := map[string]bool{"acme": true, "globex": true, "umbrella": true, "hooli": true, "soylent": true, "fleetco": true}
	tenant2 := map[string]bool{"tailspin": true, "contoso": true, "northwind": true}
	const truck7 = "356938035643809"
	tests := []struct {
		token string
		sees  func(owner string, item map[string]any) bool
	}{
		{"admin-all", func(string, map[string]any) bool { return true }},
		{"fleetco-all", func(o string, _ map[string]any) bool { return tenant1[o] }},
		{"northwind-all", func(o string, _ map[string]any) bool { return tenant2[o] }},
		{"acme-all", func(o string, _ map[string]any) bool { return o == "acme" }},
		{"tailspin-all", func(o string, _ map[string]any) bool { return o == "tailspin" }},
		{"umbrella-all", func(o string, _ map[string]any) bool { return o == "umbrella" }},
		{"acme-night-all", func(o string, it map[string]any) bool {
			if o != "acme" {
				return false
			}
			switch imei := it["imei"].(type) {
			case string:
				return imei == truck7
			case []any:
				for _, d := range imei {
					if d != truck7 {
						return false
					}
				}
				return true
			}
			return false
		}},
	}
	subaccounts, acmeDevices := a.privilegeSubaccounts(t, "acme")
	for _, c := range privilegeCombinations {
		tests = append(tests, struct {
			token string
			sees  func(owner string, item map[string]any) bool
		}{"acme-priv-" + c.name, func(o string, it map[string]any) bool { return o == "acme" && namesOnly(it, acmeDevices) }})
	}
	tokenOf := func(t *testing.T, name string) string {
		if combination, ok := strings.CutPrefix(name, "acme-priv-"); ok {
			return subaccounts[combination]
		}
		return demoToken(t, name)
	}
	admin := demoToken(t, "admin-all")
	for _, r := range listRoutes {
		owners := a.owners(t, r.table, r.id)
		everything, _ := a.list(t, r.path+"?per_page=500", admin)
		for _, tt := range tests {
			t.Run(r.table+"/"+tt.token, func(t *testing.T) {
				tok := tokenOf(t, tt.token)
				res := a.get(r.path+"?per_page=500", tok)
				combination, privileged := strings.CutPrefix(tt.token, "acme-priv-")
				if res.status == http.StatusForbidden {
					// Only a subaccount without the route's privilege.
					switch {
					case privileged && combination != "both" && res.errorCode(t) == "PRIVILEGE_REQUIRED":
					case tt.token == "acme-night-all" && (r.table == "events" || r.table == "notifications" || r.table == "webhooks" || r.table == "zones"):
					default:
						t.Fatalf("unexpected 403: %s", res.raw)
					}
					return
				}
				sees := tt.sees
				if privileged && r.table == "webhooks" {
					// A subaccount sees its own webhooks only (docs/design.md
					// §14), never its user's.
					own := tt.token
					sees = func(o string, _ map[string]any) bool { return o == own }
				}
				got, _ := a.list(t, r.path+"?per_page=500", tok)
				want := 0
				for _, it := range everything {
					if sees(owners[it[r.id].(float64)], it) {
						want++
					}
				}
				for _, it := range got {
					if !sees(owners[it[r.id].(float64)], it) {
						t.Fatalf("row %v of %s leaked", it[r.id], owners[it[r.id].(float64)])
					}
				}
				if len(got) != want {
					t.Fatalf("%d rows, want %d", len(got), want)
				}
				// A subaccount sees only its own webhooks (docs/design.md §14),
				// never its user's: none here is the right answer.
				if privileged && want == 0 && r.table != "webhooks" {
					t.Fatalf("no row of acme names only acme's devices: the demo data needs one for the subaccounts' check of %s", r.path)
				}
				// Search and filters narrow, never widen.
				for _, q := range []string{"search=oil", "search=" + truck7[:5], "imei=" + truck7, "search=%25%25", "search=%27%20OR%201%3D1"} {
					res := a.get(r.path+"?per_page=500&"+q, tok)
					if res.status != http.StatusOK {
						continue // e.g. a filter that does not exist on this resource
					}
					items, _ := a.list(t, r.path+"?per_page=500&"+q, tok)
					for _, it := range items {
						if !sees(owners[it[r.id].(float64)], it) {
							t.Fatalf("%s: row %v leaked", q, it[r.id])
						}
					}
				}
			})
		}
	}
}

// TestEventByIDIsolation checks that another tenant's rule, and a rule the
// subaccount's grants do not cover, answer 404 exactly like a missing one.
func TestEventByIDIsolation(t *testing.T) {
	a := newTestAPI(t)
	owners := a.owners(t, "events", "event_id")
	for id, owner := range owners {
		for _, tok := range []string{"acme-all", "tailspin-all", "northwind-all", "fleetco-all"} {
			res := a.get(fmt.Sprintf("/api/v2/events/%d", int64(id)), demoToken(t, tok))
			visible := map[string]map[string]bool{
				"acme-all":      {"acme": true},
				"tailspin-all":  {"tailspin": true},
				"northwind-all": {"tailspin": true, "contoso": true, "northwind": true},
				"fleetco-all":   {"acme": true, "globex": true, "umbrella": true, "hooli": true, "soylent": true, "fleetco": true},
			}[tok][owner]
			if visible && res.status != 200 || !visible && (res.status != 404 || res.errorCode(t) != "NOT_FOUND") {
				t.Errorf("event %v of %s with %s: status %d", id, owner, tok, res.status)
			}
		}
	}
	res := a.get("/api/v2/events/999999", demoToken(t, "admin-all"))
	if res.status != 404 || res.errorCode(t) != "NOT_FOUND" {
		t.Fatalf("missing rule: %d %s", res.status, res.raw)
	}
	for _, bad := range []string{"0", "-1", "abc", "1.5", "99999999999999999999"} {
		res := a.get("/api/v2/events/"+bad, demoToken(t, "admin-all"))
		if res.status != 400 || res.errorCode(t) != "INVALID_PARAMETER" {
			t.Errorf("id %s: %d %s", bad, res.status, res.raw)
		}
	}
}

func TestForbidden(t *testing.T) {
	a := newTestAPI(t)
	tests := []struct{ token, path, code string }{
		{"acme-services-only", "/api/v2/reports", "TOKEN_PERMISSION_DENIED"},
		{"acme-services-only", "/api/v2/events", "TOKEN_PERMISSION_DENIED"},
		{"acme-services-only", "/api/v2/events/1", "TOKEN_PERMISSION_DENIED"},
		{"acme-night-all", "/api/v2/events", "PRIVILEGE_REQUIRED"},
		{"acme-night-all", "/api/v2/events/1", "PRIVILEGE_REQUIRED"},
		{"globex-day-all", "/api/v2/reports", "PRIVILEGE_REQUIRED"},
	}
	for _, tt := range tests {
		t.Run(tt.token+tt.path, func(t *testing.T) {
			res := a.get(tt.path, demoToken(t, tt.token))
			if res.status != 403 || res.errorCode(t) != tt.code {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
		})
	}
	// A denied request is answered before its parameters are looked at.
	res := a.get("/api/v2/reports?page=0", demoToken(t, "acme-services-only"))
	if res.status != 403 {
		t.Fatalf("403 must come before 400: %d", res.status)
	}
	res = a.get("/api/v2/services?page=0", demoToken(t, "acme-services-only"))
	if res.status != 400 {
		t.Fatalf("allowed route with bad page: %d", res.status)
	}
}
