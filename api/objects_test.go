package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestObjects is GET /objects (docs/design.md §9) through the real API over the
// demo data: the devices each kind of caller sees, the wire fields, that
// a filter naming another tenant's account finds nothing, that search is
// literal, sort, filters and paging, and the refusals. Every response is
// validated against the OpenAPI document (testAPI.do).
func TestObjects(t *testing.T) {
	a := newTestAPI(t)
	// the owner's account id of each demo username
	id := func(username string) int64 {
		t.Helper()
		var n int64
		if err := a.db.NewRaw("SELECT id FROM accounts WHERE username = ?", username).Scan(context.Background(), &n); err != nil {
			t.Fatalf("account %s: %v", username, err)
		}
		return n
	}
	names := func(items []map[string]any) []string {
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = it["name"].(string)
		}
		return out
	}
	get := func(t *testing.T, token, query string) ([]string, map[string]any) {
		t.Helper()
		items, meta := a.list(t, "/api/v2/objects?"+query, token)
		return names(items), meta
	}
	acme := []string{"Truck 7", "Van 12", "Forklift 3"}
	globex := []string{"Reefer 21", "Pickup 4"}
	fleetco := slices.Concat(acme, globex, []string{"Shuttle 1", "Tanker 9", "Courier 2"})
	northwind := []string{"Bus 101", "Bus 102", "Crane 5"}

	t.Run("seen by each kind of caller", func(t *testing.T) {
		for _, tt := range []struct {
			token string
			want  []string
		}{
			{"admin-all", slices.Concat(fleetco, northwind)}, // admin: every device
			{"fleetco-all", fleetco},                         // manager: its managed accounts' (it owns none)
			{"northwind-all", northwind},                     // the other tenant's manager
			{"acme-all", acme},                               // user: its own
			{"umbrella-all", []string{"Shuttle 1"}},          // a read-only user may read
			{"globex-read", globex},                          // a token of GET * only
			{"acme-night-all", []string{"Truck 7"}},          // subaccount: the one device granted, without a privilege
			{"globex-day-all", []string{"Reefer 21"}},        // another subaccount, another parent
			{"tailspin-all", []string{"Bus 101", "Bus 102"}}, // a user of the other tenant
		} {
			t.Run(tt.token, func(t *testing.T) {
				got, paging := get(t, demoToken(t, tt.token), "per_page=500")
				if !sameSet(got, tt.want) {
					t.Fatalf("sees %v, want %v", got, tt.want)
				}
				if paging["total"] != float64(len(tt.want)) {
					t.Fatalf("total %v, want %d", paging["total"], len(tt.want))
				}
			})
		}
	})

	t.Run("wire fields", func(t *testing.T) {
		items, _ := a.list(t, "/api/v2/objects?imei=356938035643809", demoToken(t, "acme-all"))
		want := map[string]any{"id": items[0]["id"], "imei": "356938035643809", "account_id": float64(id("acme")),
			"name": "Truck 7", "odometer": float64(120345), "engine_hours": float64(3400),
			// the device state of docs/design.md §14: null until a reading
			"last_time": nil, "lat": nil, "lon": nil, "speed": nil, "heading": nil, "altitude": nil, "ignition": nil, "attributes": nil}
		if len(items) != 1 || fmt.Sprint(items[0]) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", items, want)
		}
		if n, ok := items[0]["id"].(float64); !ok || n < 1 {
			t.Fatalf("id %v", items[0]["id"])
		}
	})

	t.Run("another tenant's ids in filters find nothing", func(t *testing.T) {
		for _, tt := range []struct{ token, query string }{
			{"acme-all", fmt.Sprintf("account_id=%d", id("globex"))},
			{"acme-all", fmt.Sprintf("account_id=%d", id("tailspin"))},
			{"fleetco-all", fmt.Sprintf("account_id=%d", id("tailspin"))},
			{"northwind-all", fmt.Sprintf("account_id=%d", id("acme"))},
			{"acme-night-all", fmt.Sprintf("account_id=%d", id("globex"))},
			{"acme-night-all", "imei=356938035643817"}, // the parent's device, not granted
			{"acme-all", "imei=861073032104551"},       // globex's device
			{"tailspin-all", "name=" + url.QueryEscape("Truck 7")},
			{"acme-all", "search=Bus"},
		} {
			if got, paging := get(t, demoToken(t, tt.token), tt.query); len(got) != 0 || paging["total"] != float64(0) {
				t.Errorf("%s ?%s: %v (total %v), want nothing", tt.token, tt.query, got, paging["total"])
			}
		}
		// and the caller's own account id finds its own
		if got, _ := get(t, demoToken(t, "fleetco-all"), fmt.Sprintf("account_id=%d", id("globex"))); !sameSet(got, globex) {
			t.Errorf("fleetco, globex's account: %v", got)
		}
	})

	t.Run("sort, order, filters and paging", func(t *testing.T) {
		tok := demoToken(t, "fleetco-all")
		if got, _ := get(t, tok, "sort=name&per_page=500"); !slices.IsSorted(got) || len(got) != len(fleetco) {
			t.Errorf("sort=name: %v", got)
		}
		got, _ := get(t, tok, "sort=name&order=desc&per_page=500")
		if !slices.IsSortedFunc(got, func(x, y string) int { return -compare(x, y) }) {
			t.Errorf("sort=name&order=desc: %v", got)
		}
		items, _ := a.list(t, "/api/v2/objects?sort=imei&per_page=500", tok)
		imeis := make([]string, len(items))
		for i, it := range items {
			imeis[i] = it["imei"].(string)
		}
		if !slices.IsSorted(imeis) {
			t.Errorf("sort=imei: %v", imeis)
		}
		items, _ = a.list(t, "/api/v2/objects?per_page=500", tok)
		for i := 1; i < len(items); i++ {
			if items[i-1]["id"].(float64) >= items[i]["id"].(float64) {
				t.Fatalf("default order is not id ascending: %v", items)
			}
		}
		if got, _ := get(t, tok, "name="+url.QueryEscape("Van 12")); !slices.Equal(got, []string{"Van 12"}) {
			t.Errorf("name=Van 12: %v", got)
		}
		if got, _ := get(t, tok, "name=van%2012"); len(got) != 0 {
			t.Errorf("name filters exactly: %v", got)
		}
		if got, _ := get(t, tok, fmt.Sprintf("account_id=%d&name=%s", id("acme"), url.QueryEscape("Truck 7"))); !slices.Equal(got, []string{"Truck 7"}) {
			t.Errorf("account_id and name: %v", got)
		}
		var pages []string
		for page := 1; page <= 3; page++ {
			got, paging := get(t, tok, fmt.Sprintf("sort=name&per_page=3&page=%d", page))
			if paging["total"] != float64(len(fleetco)) || paging["pages"] != float64(3) || paging["per_page"] != float64(3) {
				t.Fatalf("page %d: paging %v", page, paging)
			}
			pages = append(pages, got...)
		}
		if all, _ := get(t, tok, "sort=name&per_page=500"); !slices.Equal(pages, all) {
			t.Errorf("pages %v, whole list %v", pages, all)
		}
		if got, _ := get(t, tok, "per_page=3&page=4"); len(got) != 0 {
			t.Errorf("past the last page: %v", got)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		tok := demoToken(t, "acme-all")
		for _, q := range []struct{ query, param string }{
			{"bogus=1", "bogus"}, {"odometer=1", "odometer"}, {"engine_hours=1", "engine_hours"},
			{"sort=odometer", "sort"}, {"sort=account_id", "sort"}, {"id=1", "id"},
			{"account_id=x", "account_id"}, {"account_id=-1", "account_id"}, {"search=%25", "search"},
		} {
			wantInvalidParam(t, a.get("/api/v2/objects?"+q.query, tok), q.param)
		}
		res := a.get("/api/v2/objects", demoToken(t, "acme-services-only"))
		if res.status != http.StatusForbidden || res.errorCode(t) != "TOKEN_PERMISSION_DENIED" {
			t.Fatalf("a token without GET /objects: %d %s", res.status, res.raw)
		}
		if res := a.get("/api/v2/objects", ""); res.status != http.StatusUnauthorized {
			t.Fatalf("no token: %d %s", res.status, res.raw)
		}
		if res := a.do(http.MethodDelete, "/api/v2/objects", nil, "Authorization", "Bearer "+tok); res.status != http.StatusMethodNotAllowed {
			t.Fatalf("DELETE: %d %s", res.status, res.raw)
		}
	})
	// last: it adds devices to acme
	t.Run("search is literal", func(t *testing.T) {
		tok := demoToken(t, "acme-all")
		acmeID := id("acme")
		odd := []string{`50% off`, `under_score`, `back\slash`, `O'Brien "quoted"`}
		for i, name := range odd {
			a.exec(t, "INSERT INTO objects (imei, account_id, name) VALUES (?, ?, ?)", fmt.Sprintf("999000%03d", i), acmeID, name)
		}
		for _, tt := range []struct {
			search string
			want   []string
		}{
			{"%", nil}, // too short: 400 below
			{"0%", []string{`50% off`}},
			{"%%", nil},
			{"r_s", []string{`under_score`}},
			{"_7", nil}, // as a LIKE pattern it would match "Truck 7"
			{"k_", nil}, // "Truck 7", "Forklift 3" as a pattern
			{`k\s`, []string{`back\slash`}},
			{`\%`, nil},
			{`O'B`, []string{`O'Brien "quoted"`}},
			{`"quoted"`, []string{`O'Brien "quoted"`}},
			{`' OR '1'='1`, nil},
			{"999000001", []string{`under_score`}}, // search covers imei
			{"TRUCK", []string{"Truck 7"}},         // case-insensitive
		} {
			if len(tt.search) < 2 {
				continue
			}
			got, _ := get(t, tok, "search="+url.QueryEscape(tt.search))
			if !sameSet(got, tt.want) {
				t.Errorf("search %q: %v, want %v", tt.search, got, tt.want)
			}
		}
	})
	// last: it changes the grants
	t.Run("a subaccount without grants sees nothing", func(t *testing.T) {
		a.exec(t, "DELETE FROM object_grants WHERE subaccount_id = ?", id("acme-night"))
		if got, paging := get(t, demoToken(t, "acme-night-all"), ""); len(got) != 0 || paging["total"] != float64(0) {
			t.Fatalf("sees %v", got)
		}
	})
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func compare(x, y string) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
