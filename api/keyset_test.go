package api_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage"
)

// keysetWalk walks path (a list URL with its query, without page) with
// after, per_page items at a time, from the first page until meta.next is
// absent, and returns the ids of field id in the order received. Every
// page's meta must keep the whole list's total, page 1 and per_page, and
// carry next exactly when it is not the last page.
func (a *testAPI) keysetWalk(t *testing.T, path, token, id string, perPage, total int) []float64 {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var ids []float64
	next := ""
	for n := 0; ; n++ {
		u := fmt.Sprintf("%s%sper_page=%d", path, sep, perPage)
		if next != "" {
			u += "&after=" + url.QueryEscape(next)
		}
		items, meta := a.list(t, u, token)
		if int(meta["total"].(float64)) != total || meta["page"] != 1.0 || meta["per_page"] != float64(perPage) {
			t.Fatalf("%s: meta %v, want the whole list's total %d", u, meta, total)
		}
		for _, it := range items {
			ids = append(ids, it[id].(float64))
		}
		c, more := meta["next"].(string)
		if more != (len(ids) < total) || more && len(items) != perPage {
			t.Fatalf("%s: %d items, %d of %d seen, next %q", u, len(items), len(ids), total, c)
		}
		if !more {
			return ids
		}
		if n > total {
			t.Fatalf("%s: the walk does not end", path)
		}
		next = c
	}
}

// TestListKeysetWalkEqualsPages walks every list route by every sort
// field, both ways, one item at a time with after: the walk must give
// exactly the rows of the one-page list, in its order. The demo data has
// ties in most fields and NULLs in days_last, dt_schedule_d and
// dt_schedule_w, so every kind of boundary is crossed.
func TestListKeysetWalkEqualsPages(t *testing.T) {
	// a walk of one row per page over every list and sort runs more
	// requests than a minute's default budget of one token
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
	tok := demoToken(t, "admin-all")
	for _, l := range listings {
		path, id := l.path, l.listing.ID().Name
		for _, f := range l.listing.SortFields() {
			for _, order := range []string{"asc", "desc"} {
				t.Run(path+"/"+f+"/"+order, func(t *testing.T) {
					q := path + "?sort=" + f + "&order=" + order
					want := ids(t, a, q+"&per_page=500", tok, id)
					got := a.keysetWalk(t, q, tok, id, 1, len(want))
					if !slices.Equal(got, want) {
						t.Fatalf("keyset walk %v, pages %v", got, want)
					}
				})
			}
		}
	}
}

// ids is the list of field id of the items of path.
func ids(t *testing.T, a *testAPI, path, token, id string) []float64 {
	t.Helper()
	items, _ := a.list(t, path, token)
	out := make([]float64, len(items))
	for i, it := range items {
		out[i] = it[id].(float64)
	}
	return out
}

// TestListKeysetWithFiltersAndSearch: the rows after a cursor are those of
// the request's filters and search, and a walk of several items a page
// equals the pages.
func TestListKeysetWithFiltersAndSearch(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	for _, q := range []string{
		"/services?odo=true&sort=name", "/services?search=oil&sort=days_last&order=desc",
		"/services?search=35&sort=days_last", "/reports?sort=dt_schedule_d&order=desc", "/events?sort=day_time",
		"/services?sort=imei&order=desc&odo_interval=10000",
	} {
		for _, per := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/%d", q, per), func(t *testing.T) {
				id := strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(q, "?", 2)[0], "/"), "s") + "_id"
				want := ids(t, a, "/api/v2"+q+"&per_page=500", tok, id)
				if len(want) < 2 {
					t.Fatalf("%s: %d rows, the test wants at least 2", q, len(want))
				}
				if got := a.keysetWalk(t, "/api/v2"+q, tok, id, per, len(want)); !slices.Equal(got, want) {
					t.Fatalf("keyset walk %v, pages %v", got, want)
				}
			})
		}
	}
}

// firstCursor returns meta.next of path (per_page=1).
func firstCursor(t *testing.T, a *testAPI, path, token string) string {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	_, meta := a.list(t, path+sep+"per_page=1", token)
	c, ok := meta["next"].(string)
	if !ok || c == "" {
		t.Fatalf("%s: no meta.next: %v", path, meta)
	}
	return c
}

// TestListKeysetRefused: a cursor that is not one of this list, of another
// sort or order, too long, or with a page beyond 1, is 400
// INVALID_PARAMETER naming after, never a 500; page=1 and the per_page
// bounds work as without a cursor.
func TestListKeysetRefused(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	byName := firstCursor(t, a, "/api/v2/services?sort=name", tok)
	byID := firstCursor(t, a, "/api/v2/services", tok)
	reports := firstCursor(t, a, "/api/v2/reports", tok)
	raw, err := base64.RawURLEncoding.DecodeString(byName)
	if err != nil {
		t.Fatal(err)
	}
	edited := func(from, to string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), from, to, 1)))
	}
	flipped := []byte(byName)
	flipped[len(flipped)/2] ^= 1
	tests := []struct {
		name, query, param, reason string // param "" means accepted
	}{
		{"empty", "after=", "after", "not a cursor"},
		{"junk", "after=xyz", "after", "not a cursor"},
		{"not base64", "after=" + url.QueryEscape("!!!!"), "after", "not a cursor"},
		{"padding", "after=" + byName + "%3D%3D", "after", "not a cursor"},
		{"json without checksum", "after=" + base64.RawURLEncoding.EncodeToString([]byte(`[1,"services","service_id","asc",null,3]`)), "after", "not a cursor"},
		{"flipped bit", "after=" + url.QueryEscape(string(flipped)), "after", "not a cursor"},
		{"truncated", "after=" + byName[:len(byName)-3], "after", "not a cursor"},
		{"edited value", "after=" + edited(`"asc"`, `"desc"`), "after", "not a cursor"},
		{"oversized", "after=" + strings.Repeat("A", 24577), "after", "longer than"},
		{"another list", "after=" + reports, "after", "not a cursor"},
		{"another sort", "sort=imei&after=" + byName, "after", "made for sort=name&order=asc"},
		{"another order", "sort=name&order=desc&after=" + byName, "after", "made for sort=name&order=asc"},
		{"default sort", "after=" + byName, "after", "made for sort=name"},
		{"id cursor, sorted", "sort=name&after=" + byID, "after", "made for sort=service_id&order=asc"},
		{"page 2", "sort=name&page=2&after=" + byName, "after", "page > 1"},
		{"repeated", "sort=name&after=" + byName + "&after=" + byName, "after", "more than once"},
		{"per_page 0", "sort=name&per_page=0&after=" + byName, "per_page", ""},
		{"per_page 501", "sort=name&per_page=501&after=" + byName, "per_page", ""},
		{"page 1", "sort=name&page=1&after=" + byName, "", ""},
		{"per_page 500", "sort=name&per_page=500&after=" + byName, "", ""},
		{"id cursor", "after=" + byID, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := a.get("/api/v2/services?"+tt.query, tok)
			if tt.param == "" {
				if res.status != http.StatusOK {
					t.Fatalf("status %d: %s", res.status, res.raw)
				}
				return
			}
			wantInvalidParam(t, res, tt.param)
			if details := res.body["error"].(map[string]any)["details"].(map[string]any); !strings.Contains(fmt.Sprint(details["reason"]), tt.reason) {
				t.Fatalf("details %v, want a reason with %q", details, tt.reason)
			}
		})
	}
}

// TestListKeysetCrossTenant: a cursor carries no scope. acme's cursor
// used by globex's token gives globex's rows after that position, never
// one of acme's, on every list.
func TestListKeysetCrossTenant(t *testing.T) {
	a := newTestAPI(t)
	acme, globex := demoToken(t, "acme-all"), demoToken(t, "globex-read")
	for _, l := range listings {
		path, id := l.path, l.listing.ID().Name
		t.Run(path, func(t *testing.T) {
			res := a.get(path+"?per_page=1", acme)
			if res.status != http.StatusOK {
				t.Fatalf("acme cannot list %s: %d", path, res.status)
			}
			c, ok := res.body["meta"].(map[string]any)["next"].(string)
			if !ok {
				t.Fatalf("acme has fewer than 2 rows of %s: %s", path, res.raw)
			}
			theirs := ids(t, a, path+"?per_page=500", globex, id)
			after := ids(t, a, path+"?per_page=500&after="+url.QueryEscape(c), globex, id)
			mine := ids(t, a, path+"?per_page=500", acme, id)
			for _, x := range after {
				if !slices.Contains(theirs, x) {
					t.Errorf("globex got %s %v of acme (acme's rows %v)", id, x, mine)
				}
			}
			// The cursor is a position: globex's rows with a greater id (a
			// smaller one in a list that is newest first by default).
			var want []float64
			for _, x := range theirs {
				if x > mine[0] != l.listing.DefaultDesc() && x != mine[0] {
					want = append(want, x)
				}
			}
			if !slices.Equal(after, want) {
				t.Errorf("globex after acme's cursor: %v, want %v", after, want)
			}
		})
	}
}

// TestManagementListsKeysetWalk: the management lists take after too
// (docs/decisions.md, "Deep pages"): GET /accounts, /tokens and
// /audit-events (whose default order is at, newest first: a cursor of
// the default order is accepted without sort and order) walked one item at
// a time by every sort field equal their one-page lists.
func TestManagementListsKeysetWalk(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	for i := range 3 {
		res := a.send("POST", "/api/v2/tokens", tok, fmt.Sprintf(`{"name":"walk %d","permissions":["GET /services"]}`, i))
		if res.status != http.StatusCreated {
			t.Fatalf("POST /tokens: %d %s", res.status, res.raw)
		}
	}
	for _, l := range []struct {
		path, id string
		sorts    []string
	}{
		{"/api/v2/accounts", "id", storage.Accounts.SortFields()},
		{"/api/v2/tokens", "id", storage.Tokens.SortFields()},
		{"/api/v2/audit-events", "id", storage.AuditEvents.SortFields()},
	} {
		queries := []string{l.path}
		for _, f := range l.sorts {
			queries = append(queries, l.path+"?sort="+f+"&order=asc", l.path+"?sort="+f+"&order=desc")
		}
		for _, q := range queries {
			t.Run(q, func(t *testing.T) {
				sep := "?"
				if strings.Contains(q, "?") {
					sep = "&"
				}
				want := ids(t, a, q+sep+"per_page=500", tok, l.id)
				if len(want) < 3 {
					t.Fatalf("%d rows", len(want))
				}
				if got := a.keysetWalk(t, q, tok, l.id, 1, len(want)); !slices.Equal(got, want) {
					t.Fatalf("keyset walk %v, pages %v", got, want)
				}
			})
		}
	}
}
