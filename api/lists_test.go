package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
)

// list GETs a list and returns its data items and meta.
func (a *testAPI) list(t *testing.T, path, token string) ([]map[string]any, map[string]any) {
	t.Helper()
	res := a.get(path, token)
	if res.status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, res.status, res.raw)
	}
	res.checkRequestID(t)
	raw, ok := res.body["data"].([]any)
	if !ok {
		t.Fatalf("GET %s: data is not an array: %s", path, res.raw)
	}
	items := make([]map[string]any, len(raw))
	for i, r := range raw {
		items[i] = r.(map[string]any)
	}
	return items, res.body["meta"].(map[string]any)
}

// listRoutes are the list routes, one per listed descriptor of storage
// (listings): a resource declared with list fields is tested here without
// a list to update. id is its id field, table its table.
var listRoutes = func() []listRouteCase {
	var out []listRouteCase
	for _, l := range listings {
		out = append(out, listRouteCase{l.path, l.listing.Table(), l.listing.ID().Name, l.listing})
	}
	return out
}()

// listRouteCase is a list route of the derived tests: its path, table,
// id field and descriptor.
type listRouteCase struct {
	path, table, id string
	d               *storage.Descriptor
}

func TestListParameterBounds(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	long := strings.Repeat("x", 101)
	tests := []struct {
		query, param string // param "" means accepted
	}{
		{"page=1", ""}, {"page=0", "page"}, {"page=-1", "page"}, {"page=2147483647", ""}, {"page=2147483648", "page"}, {"page=x", "page"}, {"page=1.5", "page"},
		{"per_page=1", ""}, {"per_page=500", ""}, {"per_page=0", "per_page"}, {"per_page=501", "per_page"}, {"per_page=ten", "per_page"},
		{"search=ab", ""}, {"search=a", "search"}, {"search=" + url.QueryEscape("  a  "), "search"}, {"search=" + url.QueryEscape(" ab "), ""},
		{"search=" + strings.Repeat("x", 100), ""}, {"search=" + long, "search"}, {"search=", "search"},
		{"search=" + url.QueryEscape(strings.Repeat("é", 100)), ""}, // 100 characters, 200 bytes
		{"order=asc", ""}, {"order=desc", ""}, {"order=ASC", "order"}, {"order=up", "order"},
		{"sort=name", ""}, {"sort=nope", "sort"}, {"sort=", "sort"},
		{"page=1&page=2", "page"}, {"bogus=1", "bogus"}, {"NAME=x", "NAME"},
	}
	for _, r := range listRoutes {
		for _, tt := range tests {
			// A list without search fields refuses search as an unknown
			// parameter, and one without a sortable name sort=name.
			if strings.HasPrefix(tt.query, "search=") && len(r.d.SearchFields()) == 0 {
				tt.param = "search"
			}
			if f, ok := r.d.Field("name"); tt.query == "sort=name" && (!ok || !f.Sort) {
				tt.param = "sort"
			}
			t.Run(r.path+"?"+tt.query, func(t *testing.T) {
				res := a.get(r.path+"?"+tt.query, tok)
				if tt.param == "" {
					if res.status != http.StatusOK {
						t.Fatalf("status %d: %s", res.status, res.raw)
					}
					return
				}
				wantInvalidParam(t, res, tt.param)
			})
		}
	}
}

func TestListDefaultsAndPaging(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	for _, r := range listRoutes {
		t.Run(r.path, func(t *testing.T) {
			all, meta := a.list(t, r.path, tok)
			if meta["page"] != 1.0 || meta["per_page"] != 50.0 {
				t.Fatalf("defaults: %v", meta)
			}
			total := int(meta["total"].(float64))
			if total != len(all) || total < 3 {
				t.Fatalf("total %d, items %d", total, len(all))
			}
			for i := 1; i < len(all); i++ {
				prev, cur := all[i-1][r.id].(float64), all[i][r.id].(float64)
				if r.d.DefaultDesc() {
					prev, cur = cur, prev // newest first (the descriptor's default)
				}
				if prev >= cur {
					t.Fatalf("default order is not %s %s", r.id, map[bool]string{false: "ascending", true: "descending"}[r.d.DefaultDesc()])
				}
			}
			var seen []float64
			pages := (total + 1) / 2
			for p := 1; p <= pages; p++ {
				items, meta := a.list(t, fmt.Sprintf("%s?per_page=2&page=%d", r.path, p), tok)
				if int(meta["total"].(float64)) != total || int(meta["pages"].(float64)) != pages {
					t.Fatalf("page %d meta %v", p, meta)
				}
				for _, it := range items {
					seen = append(seen, it[r.id].(float64))
				}
			}
			if len(seen) != total {
				t.Fatalf("paging saw %d items, want %d", len(seen), total)
			}
			past, meta := a.list(t, fmt.Sprintf("%s?per_page=2&page=%d", r.path, pages+5), tok)
			if len(past) != 0 || int(meta["total"].(float64)) != total {
				t.Fatalf("past the end: %d items, meta %v", len(past), meta)
			}
		})
	}
}

// sortable returns a comparable key of a JSON value for order checks.
func sortable(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return fmt.Sprintf("%020.3f", x+1e12)
	case bool:
		return fmt.Sprint(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// TestListSortEveryField sorts every list route (listings: one per listed
// descriptor) by every field of its sort enumeration (the descriptor's
// SortFields, as the OpenAPI document publishes it), both ways: scalar
// values come out ordered, ties broken by the id in the same direction.
// Nothing here names a resource, so a new list is sorted by every field
// without an edit; a route none of whose fields could be compared (fewer
// than two rows in the demo data, or only list-valued fields) fails.
func TestListSortEveryField(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	if len(listings) == 0 {
		t.Fatal("no list route: storage declares no listed resource")
	}
	for _, l := range listings {
		path, id := l.path, l.listing.ID().Name
		compared := 0 // fields whose order was checked on at least one pair of values
		for _, f := range l.listing.SortFields() {
			for _, order := range []string{"asc", "desc"} {
				t.Run(path+"/"+f+"/"+order, func(t *testing.T) {
					items, _ := a.list(t, path+"?sort="+f+"&order="+order, tok)
					if len(items) < 2 {
						t.Fatalf("only %d items: the demo data needs at least 2 rows of %s", len(items), path)
					}
					ids := make([]float64, len(items))
					for i, it := range items {
						ids[i] = it[id].(float64)
					}
					// Scalar fields of simple types must come out ordered;
					// ties are broken by the id in the same direction.
					pairs := 0
					for i := 1; i < len(items); i++ {
						prev, cur := items[i-1][f], items[i][f]
						if !scalar(prev) || !scalar(cur) || prev == nil || cur == nil {
							continue
						}
						pairs++
						c := strings.Compare(sortable(prev), sortable(cur))
						if order == "desc" {
							c = -c
						}
						if c > 0 || c == 0 && (order == "asc") != (ids[i-1] < ids[i]) {
							t.Fatalf("items %d and %d out of order on %s %s: %v, %v (ids %v, %v)", i-1, i, f, order, prev, cur, ids[i-1], ids[i])
						}
					}
					if pairs > 0 && order == "asc" {
						compared++
					}
				})
			}
		}
		if compared == 0 {
			t.Errorf("%s: no sort field was checked on two values (sort fields %v): the demo data needs at least 2 rows with scalar values", path, l.listing.SortFields())
		}
	}
}

func scalar(v any) bool {
	switch v.(type) {
	case nil, float64, bool, string:
		return true
	}
	return false
}

func TestListFilters(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	tests := []struct {
		path, query string
		check       func(map[string]any) bool
	}{
		{"/api/v2/services", "imei=356938035643809", func(m map[string]any) bool { return m["imei"] == "356938035643809" }},
		{"/api/v2/services", "name=" + url.QueryEscape("Oil change"), func(m map[string]any) bool { return m["name"] == "Oil change" }},
		{"/api/v2/services", "odo=true", func(m map[string]any) bool { return m["odo"] == true }},
		{"/api/v2/services", "odo=false", func(m map[string]any) bool { return m["odo"] == false }},
		{"/api/v2/services", "odo_interval=10000", func(m map[string]any) bool { return m["odo_interval"] == 10000.0 }},
		{"/api/v2/reports", "imei=356938035643809", func(m map[string]any) bool { return contains(m["imei"], "356938035643809") }},
		{"/api/v2/reports", "schedule_period=d", func(m map[string]any) bool { return m["schedule_period"] == "d" }},
		{"/api/v2/events", "week_days=mon", func(m map[string]any) bool { return contains(m["week_days"], "mon") }},
		{"/api/v2/events", "active=true", func(m map[string]any) bool { return m["active"] == true }},
		{"/api/v2/events", "day_time=" + url.QueryEscape(`{"from":"00:00","to":"23:59"}`), func(m map[string]any) bool {
			d := m["day_time"].(map[string]any)
			return d["from"] == "00:00" && d["to"] == "23:59"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.path+"?"+tt.query, func(t *testing.T) {
			items, meta := a.list(t, tt.path+"?"+tt.query, tok)
			if len(items) == 0 {
				t.Fatalf("filter matched nothing")
			}
			all, _ := a.list(t, tt.path, tok)
			want := 0
			for _, it := range all {
				if tt.check(it) {
					want++
				}
			}
			if len(items) != want || int(meta["total"].(float64)) != want {
				t.Fatalf("%d items (total %v), want %d", len(items), meta["total"], want)
			}
			for _, it := range items {
				if !tt.check(it) {
					t.Fatalf("item does not match the filter: %v", it)
				}
			}
		})
	}
	bad := []struct{ path, query, param string }{
		{"/api/v2/services", "odo=yes", "odo"},
		{"/api/v2/services", "odo_interval=ten", "odo_interval"},
		{"/api/v2/services", "days_last=2024-13-40", "days_last"},
		{"/api/v2/services", "service_id=1", "service_id"},
		{"/api/v2/reports", "dt_schedule_d=yesterday", "dt_schedule_d"},
		{"/api/v2/reports", "stop_duration=1.5", "stop_duration"},
		{"/api/v2/events", "day_time=notjson", "day_time"},
		{"/api/v2/events", "email_template_id=x", "email_template_id"},
		{"/api/v2/events", "event_id=1", "event_id"},
	}
	for _, tt := range bad {
		t.Run("bad "+tt.query, func(t *testing.T) {
			res := a.get(tt.path+"?"+tt.query, tok)
			if res.status != 400 || res.errorCode(t) != "INVALID_PARAMETER" {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
			if p := res.body["error"].(map[string]any)["details"].(map[string]any)["parameter"]; p != tt.param {
				t.Fatalf("parameter %v, want %s", p, tt.param)
			}
		})
	}
}

func contains(list any, s string) bool {
	l, _ := list.([]any)
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// TestSearchIsLiteralAndScoped inserts rows whose names hold LIKE
// metacharacters in two tenants and checks that search matches them
// literally and never crosses the caller's scope.
func TestSearchIsLiteralAndScoped(t *testing.T) {
	a := newTestAPI(t)
	names := []string{`50% off_road`, `500 offroad`, `back\slash`, `it's "quoted"`, `plain`}
	for _, n := range names {
		for _, owner := range []string{"acme", "tailspin"} {
			a.exec(t, `INSERT INTO reports (account_id, name, type) SELECT id, ?, 'custom' FROM accounts WHERE username = ?`, n+" "+owner, owner)
		}
	}
	tests := []struct {
		search string
		want   []string
	}{
		{`0% o`, []string{`50% off_road acme`}},
		{`%`, []string{`50% off_road acme`}},
		{`f_r`, []string{`50% off_road acme`}},
		{`_`, nil}, // one character: rejected below
		{`\s`, []string{`back\slash acme`}},
		{`'s "q`, []string{`it's "quoted" acme`}},
		{`  PLAIN `, []string{`plain acme`}},
		{`50`, []string{`50% off_road acme`, `500 offroad acme`}},
		{`%%`, nil},
		{`__`, nil},
	}
	tok := demoToken(t, "acme-all")
	for _, tt := range tests {
		t.Run(tt.search, func(t *testing.T) {
			res := a.get("/api/v2/reports?search="+url.QueryEscape(tt.search), tok)
			if len(strings.TrimSpace(tt.search)) < 2 {
				if res.status != 400 {
					t.Fatalf("status %d for a one-character search", res.status)
				}
				return
			}
			items, _ := a.list(t, "/api/v2/reports?search="+url.QueryEscape(tt.search), tok)
			var got []string
			for _, it := range items {
				got = append(got, it["name"].(string))
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPerPageBoundFromStorage (issue 34 item 11): page and per_page have
// one bound, storage's (storage.MaxPage, storage.MaxPerPage,
// storage.DefaultPerPage): every paged operation of the OpenAPI document —
// the lists, GET /accounts/{id}/objects and GET /usage — declares it, and
// each answers a page at the bound and 400 INVALID_PARAMETER one beyond,
// before storage is asked (which would refuse it too:
// storage.TestPageBoundsOnePlace).
func TestPerPageBoundFromStorage(t *testing.T) {
	doc := loadOpenAPI(t, openAPIDoc(t))
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	var paged []string
	for _, path := range doc.Paths.InMatchingOrder() {
		op := doc.Paths.Value(path).Get
		if op == nil || op.Parameters.GetByInAndName("query", "per_page") == nil {
			continue
		}
		if path == "/objects/{id}/positions" {
			continue // keyset by time only, per_page ≤ 500 (docs/design.md §14): TestPositionsScope
		}
		paged = append(paged, path)
		per := op.Parameters.GetByInAndName("query", "per_page").Schema.Value
		page := op.Parameters.GetByInAndName("query", "page").Schema.Value
		if per.Max == nil || *per.Max != storage.MaxPerPage || per.Min == nil || *per.Min != 1 || per.Default != float64(storage.DefaultPerPage) {
			t.Errorf("GET %s: per_page declared %v..%v default %v, want 1..%d default %d", path, per.Min, per.Max, per.Default, storage.MaxPerPage, storage.DefaultPerPage)
		}
		if page == nil || page.Max == nil || *page.Max != storage.MaxPage {
			t.Errorf("GET %s: page declared without the bound %d", path, storage.MaxPage)
		}
		id := a.accountID(t, "acme-night") // the {id} of an account's route
		if strings.HasPrefix(path, "/webhooks/{id}") {
			id = a.demoWebhookID(t, "acme") // a webhook's: the example id names none
		}
		url := "/api/v2" + strings.ReplaceAll(path, "{id}", fmt.Sprint(id))
		for _, c := range []struct {
			query, param string
		}{
			{fmt.Sprintf("per_page=%d", storage.MaxPerPage), ""},
			{fmt.Sprintf("per_page=%d", storage.MaxPerPage+1), "per_page"},
			{fmt.Sprintf("page=%d", storage.MaxPage), ""},
			{fmt.Sprintf("page=%d", storage.MaxPage+1), "page"},
		} {
			t.Run(path+"?"+c.query, func(t *testing.T) {
				res := a.get(url+"?"+c.query, tok)
				if c.param == "" {
					if res.status != http.StatusOK {
						t.Fatalf("status %d: %s", res.status, res.raw)
					}
					if m := res.body["meta"].(map[string]any); c.query[:4] == "per_" && m["per_page"] != float64(storage.MaxPerPage) {
						t.Fatalf("meta %v", m)
					}
					return
				}
				wantInvalidParam(t, res, c.param)
			})
		}
	}
	for _, want := range []string{"/services", "/accounts/{id}/objects", "/usage", "/audit-events"} {
		if !slices.Contains(paged, want) {
			t.Errorf("GET %s has no per_page in the document (paged operations: %v)", want, paged)
		}
	}
}
