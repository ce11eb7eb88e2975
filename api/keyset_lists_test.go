package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// keysetList is one list that takes after, as the OpenAPI document
// declares it: its path (with its path parameters filled in) and the
// query parameters that choose its rows.
type keysetList struct {
	path    string // below /api/v2, e.g. /accounts/12/objects
	sorts   []string
	filters []*openapi3.Parameter
	search  bool
}

// keysetLists are every GET operation of the published document that takes
// after (a new list is in without a change here); a path with a parameter
// is one list for each of ids.
func keysetLists(t *testing.T, ids ...int64) []keysetList {
	t.Helper()
	doc := loadOpenAPI(t, openAPIDoc(t))
	shared := map[string]bool{"page": true, "per_page": true, "after": true, "search": true, "order": true, "sort": true}
	var out []keysetList
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		op := doc.Paths.Value(path).Get
		if op == nil || op.Parameters.GetByInAndName(openapi3.ParameterInQuery, "after") == nil {
			continue
		}
		if path == "/objects/{id}/positions" {
			continue // its after is a time, not a cursor (docs/design.md §14): TestReadingsStoreAndState pages it
		}
		l := keysetList{path: path}
		for _, pr := range op.Parameters {
			p := pr.Value
			switch {
			case p.In != openapi3.ParameterInQuery:
			case p.Name == "sort":
				for _, v := range p.Schema.Value.Enum {
					l.sorts = append(l.sorts, v.(string))
				}
			case p.Name == "search":
				l.search = true
			case !shared[p.Name]:
				l.filters = append(l.filters, p)
			}
		}
		if !strings.Contains(path, "{") {
			out = append(out, l)
			continue
		}
		for _, id := range ids {
			c := l
			c.path = path[:strings.Index(path, "{")] + fmt.Sprint(id) + path[strings.Index(path, "}")+1:]
			out = append(out, c)
		}
	}
	return out
}

// with adds query to the list URL path.
func with(path, query string) string {
	if query == "" {
		return path
	}
	if strings.Contains(path, "?") {
		return path + "&" + query
	}
	return path + "?" + query
}

// wantCursorRefused checks that res is 400 INVALID_PARAMETER naming after
// with a reason containing reason.
func wantCursorRefused(t *testing.T, res response, reason string) {
	t.Helper()
	wantInvalidParam(t, res, "after")
	if got := res.body["error"].(map[string]any)["details"].(map[string]any)["reason"].(string); !strings.Contains(got, reason) {
		t.Fatalf("reason %q, want one with %q", got, reason)
	}
}

// TestListKeysetCursorBelongsToItsList (issue 39): a cursor belongs to the
// list that gave it and to the query that chose its rows. Across every
// ordered pair of lists that take after (from the OpenAPI document; GET
// /accounts/{id}/objects of two subaccounts are two lists), the cursor of
// one, by every sort field both share and in the default order, is 400
// INVALID_PARAMETER naming after on the other: on 272e7e0 a cursor of
// /objects sorted by imei was taken by /accounts/{id}/objects, and one of
// a subaccount's devices by another's. On its own list, a cursor with
// another filter or search is refused too (every declared filter, and
// search), while the same query in another spelling (parameters in
// another order, search with spaces around it) and another per_page take
// it.
func TestListKeysetCursorBelongsToItsList(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "admin-all")
	// Two subaccounts with two devices or more granted each.
	var subs []int64
	for _, g := range []struct {
		sub  string
		imei []string
	}{
		{"acme-night", []string{"356938035643809", "356938035643817", "356938035643825"}},
		{"globex-day", []string{"861073032104551", "861073032104569"}},
	} {
		p, err := a.store.AccountByUsername(t.Context(), g.sub)
		if err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"imei":["%s"]}`, strings.Join(g.imei, `","`))
		if res := a.send(http.MethodPut, fmt.Sprintf("/api/v2/accounts/%d/objects", p.ID), tok, body); res.status != http.StatusOK {
			t.Fatalf("PUT grants of %s: %d %s", g.sub, res.status, res.raw)
		}
		subs = append(subs, p.ID)
	}
	lists := keysetLists(t, subs...)
	if len(lists) < 9 {
		t.Fatalf("%d lists take after, want the 8 routes of docs/api.md with two subaccounts", len(lists))
	}
	// cursors[list][sort]: the cursor after the first row ("" sort: the
	// list's default order, no sort parameter).
	cursors := map[string]map[string]string{}
	for _, l := range lists {
		cursors[l.path] = map[string]string{"": firstCursor(t, a, "/api/v2"+l.path, tok)}
		for _, f := range l.sorts {
			cursors[l.path][f] = firstCursor(t, a, "/api/v2"+l.path+"?sort="+f, tok)
		}
	}
	pairs := 0
	for _, from := range lists {
		for _, to := range lists {
			if from.path == to.path {
				continue
			}
			for _, f := range append([]string{""}, to.sorts...) {
				if f != "" && !slices.Contains(from.sorts, f) {
					continue
				}
				q := "after=" + url.QueryEscape(cursors[from.path][f])
				if f != "" {
					q = "sort=" + f + "&" + q
				}
				t.Run(fmt.Sprintf("%s to %s/%s", from.path, to.path, f), func(t *testing.T) {
					wantCursorRefused(t, a.get(with("/api/v2"+to.path, q), tok), "not a cursor of this list")
				})
				pairs++
			}
		}
	}
	t.Logf("%d lists, %d cursors sent to another list", len(lists), pairs)
	for _, l := range lists {
		c := url.QueryEscape(cursors[l.path][""])
		base := "/api/v2" + l.path
		t.Run(l.path+"/own", func(t *testing.T) {
			if res := a.get(with(base, "per_page=3&after="+c), tok); res.status != http.StatusOK {
				t.Fatalf("its own cursor with another per_page: %d %s", res.status, res.raw)
			}
		})
		for _, p := range l.filters {
			t.Run(l.path+"/filter/"+p.Name, func(t *testing.T) {
				q := url.Values{p.Name: {paramValue(t, p)}}.Encode()
				wantCursorRefused(t, a.get(with(base, q+"&after="+c), tok), "made for other filters or search")
			})
		}
		if l.search {
			t.Run(l.path+"/search", func(t *testing.T) {
				wantCursorRefused(t, a.get(with(base, "search=ab&after="+c), tok), "made for other filters or search")
			})
		}
	}
	// A cursor of a filtered and searched list: refused without the
	// filter, without the search or with another value of either; taken
	// with the query spelled otherwise.
	for _, c := range []struct {
		query          string
		refused, taken []string
	}{
		{"odo=true&sort=name",
			[]string{"sort=name", "odo=false&sort=name", "odo=true&engh=true&sort=name", "odo=true&sort=name&search=oil"},
			[]string{"sort=name&odo=true", "odo=true&sort=name&per_page=1&page=1"}},
		{"search=35&sort=days_last",
			[]string{"sort=days_last", "search=356&sort=days_last", "search=35&sort=days_last&odo=true"},
			[]string{"sort=days_last&search=%2035%20", "search=35&sort=days_last&order=asc"}},
	} {
		cursor := url.QueryEscape(firstCursor(t, a, "/api/v2/services?"+c.query, tok))
		for _, q := range c.refused {
			t.Run(c.query+"/refused/"+q, func(t *testing.T) {
				wantCursorRefused(t, a.get("/api/v2/services?"+q+"&after="+cursor, tok), "made for other filters or search")
			})
		}
		for _, q := range c.taken {
			t.Run(c.query+"/taken/"+q, func(t *testing.T) {
				if res := a.get("/api/v2/services?"+q+"&after="+cursor, tok); res.status != http.StatusOK {
					t.Fatalf("%d %s", res.status, res.raw)
				}
			})
		}
	}
}
