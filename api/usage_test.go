package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/metering"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// meteredServer builds a second server over base's database that meters
// its requests (a replica with Config.Usage), answering at the clock now.
func meteredServer(t *testing.T, base *testAPI, now func() time.Time) (*testAPI, *metering.Meter) {
	t.Helper()
	engine, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	meter, err := metering.New(base.store, metering.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: base.store}, Policy: engine, Store: base.store,
		Ready: base.store, Usage: meter, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return &testAPI{t: t, handler: srv.Handler(), store: base.store, db: base.db}, meter
}

// usageItems reads GET /usage (through base, which meters nothing) as the
// token sees it.
func usageItems(t *testing.T, a *testAPI, token, query string) ([]storage.UsageTotal, map[string]any) {
	t.Helper()
	r := a.get("/api/v2/usage?"+query, token)
	if r.status != http.StatusOK {
		t.Fatalf("GET /usage?%s: %d %s", query, r.status, r.raw)
	}
	var env struct {
		Data []storage.UsageTotal `json:"data"`
	}
	if err := json.Unmarshal(r.raw, &env); err != nil {
		t.Fatal(err)
	}
	meta, _ := r.body["meta"].(map[string]any)
	return env.Data, meta
}

// TestUsageMetering: what a metered server answers is what GET /usage
// shows after a flush, per account, day and route template: requests,
// rows of the lists, writes (2xx of a write route), 4xx, 5xx and the
// bodies' bytes; a 401 (a bad token, an expired one) is attributed to
// nobody; the route is the template, never the raw path.
func TestUsageMetering(t *testing.T) {
	base := newTestAPI(t)
	day := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	srv, meter := meteredServer(t, base, func() time.Time { return day })
	acme, narrow, admin := demoToken(t, "acme-all"), demoToken(t, "acme-services-only"), demoToken(t, "admin-all")
	var rows, bytes, acmeBytes int64
	count := func(r response, token string) {
		if token != acme {
			return
		}
		acmeBytes += int64(len(r.raw))
		if list, ok := r.body["data"].([]any); ok && r.status == http.StatusOK {
			rows += int64(len(list))
		}
	}
	for _, c := range []struct {
		method, path, token, body string
		status                    int
	}{
		{"GET", "/api/v2/services?per_page=3", acme, "", 200},
		{"GET", "/api/v2/services", acme, "", 200},
		{"GET", "/api/v2/me", acme, "", 200},
		{"GET", "/api/v2/events/987654321", acme, "", 404},
		{"GET", "/api/v2/events/987654322", acme, "", 404},
		{"POST", "/api/v2/passengers", acme, `{"passenger_name":"Metered"}`, 201},
		{"POST", "/api/v2/passengers", acme, `{"passenger_name":""}`, 400},
		{"GET", "/api/v2/reports", narrow, "", 403},
		{"GET", "/api/v2/me", "flt_notATokenAtAll00000000000000000", "", 401},
		{"GET", "/api/v2/me", demoToken(t, "acme-expired"), "", 401},
		{"GET", "/api/v2/accounts", admin, "", 200},
	} {
		r := srv.send(c.method, c.path, c.token, c.body)
		if r.status != c.status {
			t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, r.status, c.status, r.raw)
		}
		count(r, c.token)
		if c.token == narrow {
			acmeBytes += int64(len(r.raw))
		}
		if c.token == admin {
			bytes = int64(len(r.raw))
		}
	}
	if err := meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if meter.Pending() != 0 {
		t.Fatalf("pending after a flush: %d", meter.Pending())
	}
	items, meta := usageItems(t, base, admin, "from=2026-03-10&to=2026-03-10")
	if len(items) != 2 || meta["total"] != float64(2) {
		t.Fatalf("items %+v meta %v, want acme's and admin's", items, meta)
	}
	byAccount := map[int64]storage.UsageTotal{}
	for _, u := range items {
		byAccount[u.AccountID] = u
	}
	got := byAccount[base.accountID(t, "acme")]
	want := storage.UsageTotal{AccountID: base.accountID(t, "acme"), Period: "2026-03-10", Requests: 8, RowsReturned: rows, Writes: 1,
		Errors4xx: 4, BytesOut: acmeBytes, Routes: map[string]int64{"GET /services": 2, "GET /me": 1, "GET /events/{id}": 2,
			"POST /passengers": 2, "GET /reports": 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) || rows == 0 {
		t.Errorf("acme:\n%+v\nwant\n%+v", got, want)
	}
	ad := byAccount[base.accountID(t, "admin")]
	if ad.Requests != 1 || ad.RowsReturned == 0 || ad.BytesOut != bytes || ad.Routes["GET /accounts"] != 1 {
		t.Errorf("admin: %+v", ad)
	}
	// A second flush adds (the upsert is additive) and an empty one
	// writes nothing.
	srv.send("GET", "/api/v2/me", acme, "")
	if err := meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	items, _ = usageItems(t, base, admin, "from=2026-03-10&to=2026-03-10&account_id="+fmt.Sprint(want.AccountID))
	if len(items) != 1 || items[0].Requests != 9 || items[0].Routes["GET /me"] != 2 {
		t.Errorf("after a second flush: %+v", items)
	}
}

// TestUsageIsolation: GET /usage shows the usage of the caller's
// management scope and nothing else; another tenant's account_id is 404
// like GET /accounts/{id}; the usage.read decision is asked; group=month
// sums the days; pages are stable.
func TestUsageIsolation(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	d1 := time.Date(2026, 4, 29, 0, 0, 0, 0, time.UTC)
	var counts []storage.UsageCount
	names := []string{"admin", "fleetco", "acme", "acme-night", "globex", "globex-day", "northwind", "tailspin"}
	for i, name := range names {
		for day := range 4 { // 04-29, 04-30, 05-01, 05-02
			counts = append(counts, storage.UsageCount{AccountID: a.accountID(t, name), Day: d1.AddDate(0, 0, day), Route: "GET /services",
				Requests: int64(10 + i), RowsReturned: 5, BytesOut: 100},
				storage.UsageCount{AccountID: a.accountID(t, name), Day: d1.AddDate(0, 0, day), Route: "GET /me", Requests: 1, BytesOut: 10})
		}
	}
	if err := a.store.AddUsage(ctx, counts); err != nil {
		t.Fatal(err)
	}
	ids := func(items []storage.UsageTotal) []string {
		var out []string
		for _, u := range items {
			for _, n := range names {
				if a.accountID(t, n) == u.AccountID && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		token string
		sees  []string
	}{
		{"admin-all", names},
		{"fleetco-all", []string{"acme", "acme-night", "fleetco", "globex", "globex-day"}},
		{"northwind-all", []string{"northwind", "tailspin"}},
		{"acme-all", []string{"acme", "acme-night"}},
		{"acme-night-all", []string{"acme-night"}},
		{"tailspin-all", []string{"tailspin"}},
	} {
		t.Run(c.token, func(t *testing.T) {
			items, _ := usageItems(t, a, demoToken(t, c.token), "from=2026-04-29&to=2026-05-02&per_page=500")
			want := slices.Sorted(slices.Values(c.sees))
			if got := ids(items); !slices.Equal(got, want) {
				t.Errorf("sees %v, want %v", got, want)
			}
			if len(items) != 4*len(c.sees) {
				t.Errorf("%d items, want %d (4 days each)", len(items), 4*len(c.sees))
			}
			for _, n := range names {
				r := a.get(fmt.Sprintf("/api/v2/usage?from=2026-04-29&to=2026-05-02&account_id=%d", a.accountID(t, n)), demoToken(t, c.token))
				acc := a.get(fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, n)), demoToken(t, c.token))
				if slices.Contains(c.sees, n) {
					if r.status != http.StatusOK || len(r.body["data"].([]any)) != 4 {
						t.Errorf("account_id of %s: %d %s", n, r.status, r.raw)
					}
					continue
				}
				// Outside the scope: the answer of GET /accounts/{id}.
				if r.status != http.StatusNotFound || r.errorCode(t) != "NOT_FOUND" || acc.status != http.StatusNotFound {
					t.Errorf("account_id of %s: %d %s (GET /accounts/{id}: %d)", n, r.status, r.raw, acc.status)
				}
			}
		})
	}

	// group=month: April's two days and May's two days, per account.
	acme := a.accountID(t, "acme")
	items, meta := usageItems(t, a, demoToken(t, "acme-all"), fmt.Sprintf("from=2026-04-01&to=2026-05-31&group=month&account_id=%d", acme))
	if len(items) != 2 || items[0].Period != "2026-04" || items[1].Period != "2026-05" || items[0].Requests != 2*(10+2+1) ||
		items[0].Routes["GET /services"] != 24 || items[0].RowsReturned != 10 || meta["total"] != float64(2) {
		t.Errorf("monthly: %+v %v", items, meta)
	}
	// The default range is the current month: nothing here.
	items, _ = usageItems(t, a, demoToken(t, "acme-all"), "")
	if len(items) != 0 {
		t.Errorf("default range: %+v", items)
	}
	// Pages: period, then account; stable.
	var paged []storage.UsageTotal
	for page := 1; ; page++ {
		items, meta := usageItems(t, a, demoToken(t, "fleetco-all"), fmt.Sprintf("from=2026-04-29&to=2026-05-02&per_page=3&page=%d", page))
		if meta["total"] != float64(20) || meta["pages"] != float64(7) {
			t.Fatalf("meta %v", meta)
		}
		if len(items) == 0 {
			break
		}
		paged = append(paged, items...)
	}
	if len(paged) != 20 || !slices.IsSortedFunc(paged, func(x, y storage.UsageTotal) int {
		return strings.Compare(fmt.Sprintf("%s %020d", x.Period, x.AccountID), fmt.Sprintf("%s %020d", y.Period, y.AccountID))
	}) {
		t.Errorf("pages: %+v", paged)
	}
	// The route decision: a token without GET /usage.
	r := a.get("/api/v2/usage", demoToken(t, "acme-services-only"))
	if r.status != http.StatusForbidden || r.errorCode(t) != "TOKEN_PERMISSION_DENIED" {
		t.Errorf("without the permission: %d %s", r.status, r.raw)
	}
}

// TestUsageParameters: every malformed parameter of GET /usage is 400
// INVALID_PARAMETER naming it, before the database is asked.
func TestUsageParameters(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	for _, c := range []struct{ query, param string }{
		{"from=2026-02-30", "from"}, {"from=2026-1-01", "from"}, {"from=26-01-01", "from"}, {"from=", "from"},
		{"to=tomorrow", "to"}, {"to=2026-13-01", "to"}, {"to=0000-01-01", "to"}, {"to=2026-01-01T00:00:00Z", "to"},
		{"from=2026-05-02&to=2026-05-01", "from"}, {"from=2024-01-01&to=2025-01-01", "to"}, {"from=0001-01-01&to=9999-12-31", "to"},
		{"group=week", "group"}, {"group=", "group"}, {"group=DAY", "group"},
		{"account_id=abc", "account_id"}, {"account_id=0", "account_id"}, {"account_id=01", "account_id"},
		{"page=0", "page"}, {"per_page=501", "per_page"},
		{"from=2026-01-01&from=2026-01-02", "from"}, {"group=day&group=month", "group"},
		{"bogus=1", "bogus"}, {"sort=period", "sort"}, {"search=acme", "search"}, {"from=%zz", "from"},
	} {
		t.Run(c.query, func(t *testing.T) {
			wantInvalidParam(t, a.doRaw(http.MethodGet, "/api/v2/usage", c.query, "", tok), c.param)
		})
	}
	// The widest range is accepted.
	if r := a.doRaw(http.MethodGet, "/api/v2/usage", "from=2025-01-01&to=2026-01-01&group=month", "", tok); r.status != http.StatusOK {
		t.Errorf("366 days: %d %s", r.status, r.raw)
	}
}

// TestUsageCountsConfigWrites: the writes of docs/design.md §15 are
// counted in usage (issue 38 item 3) like every write: each 2xx one write of
// its route, a refused one a 4xx and no write.
func TestUsageCountsConfigWrites(t *testing.T) {
	base := newTestAPI(t)
	day := time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC)
	srv, meter := meteredServer(t, base, func() time.Time { return day })
	acme, admin := demoToken(t, "acme-all"), demoToken(t, "admin-all")
	ids := map[string]int64{}
	for _, c := range configCases {
		r := srv.send("POST", c.path, acme, c.create)
		if r.status != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", c.path, r.status, r.raw)
		}
		ids[c.path] = int64(r.data(t)[c.id].(float64))
	}
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"PATCH", fmt.Sprintf("/api/v2/events/%d", ids["/api/v2/events"]), `{"active":false}`, 200},
		{"POST", fmt.Sprintf("/api/v2/services/%d/done", ids["/api/v2/services"]), `{}`, 200},
		{"DELETE", fmt.Sprintf("/api/v2/reports/%d", ids["/api/v2/reports"]), ``, 204},
		{"POST", "/api/v2/events", `{"type":"teleport","name":"R"}`, 400},
	} {
		if r := srv.send(c.method, c.path, acme, c.body); r.status != c.status {
			t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, r.status, c.status, r.raw)
		}
	}
	if err := meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	items, _ := usageItems(t, base, admin, "from=2026-03-11&to=2026-03-11&account_id="+fmt.Sprint(base.accountID(t, "acme")))
	if len(items) != 1 {
		t.Fatalf("items %+v, want acme's", items)
	}
	got := items[0]
	want := map[string]int64{"POST /events": 2, "POST /services": 1, "POST /reports": 1, "PATCH /events/{id}": 1,
		"POST /services/{id}/done": 1, "DELETE /reports/{id}": 1}
	if got.Requests != 7 || got.Writes != 6 || got.Errors4xx != 1 || fmt.Sprint(got.Routes) != fmt.Sprint(want) {
		t.Errorf("acme: %+v, want 7 requests, 6 writes, 1 4xx, routes %v", got, want)
	}
}
