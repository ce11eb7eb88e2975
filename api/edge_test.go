package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/api"
)

// raw sends req through the real router and returns the recorded answer,
// whatever its body.
func (a *testAPI) raw(req *http.Request) *httptest.ResponseRecorder {
	a.t.Helper()
	if strings.HasSuffix(req.URL.Path, "/notifications/stream") {
		// A stream that opens stays open under the recorder until its
		// request ends: it is ended after a moment (a bound, not a
		// measurement), its headers and first frames recorded.
		ctx, cancel := context.WithTimeout(req.Context(), 300*time.Millisecond)
		defer cancel()
		req = req.WithContext(ctx)
	}
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	return rec
}

// operationPaths returns every path of the OpenAPI document with its
// parameters filled in ({id} and {delivery_id} → 1), and its methods.
func operationPaths(t *testing.T) map[string][]string {
	t.Helper()
	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for p, item := range doc.Paths.Map() {
		concrete := strings.NewReplacer("{id}", "1", "{delivery_id}", "1").Replace(p)
		if strings.Contains(concrete, "{") {
			t.Fatalf("path %s has a parameter the test does not fill", p)
		}
		for m := range item.Operations() {
			out[api.BasePath+concrete] = append(out[api.BasePath+concrete], m)
		}
	}
	if len(out) < 6 {
		t.Fatalf("only %d paths in the document", len(out))
	}
	return out
}

// TestResponseHygieneHeaders checks X-Content-Type-Options: nosniff and
// Cache-Control: no-store on every response: every operation of the
// document with and without a token, unknown routes and methods, the
// OpenAPI document, the docs page and its assets, and the operations
// endpoints.
func TestResponseHygieneHeaders(t *testing.T) {
	// budgets that five probes per operation never spend: a probe answered
	// 429 instead of its status would leave the test short of its class
	// (the order of the probes is the map's)
	a := newTestAPIWith(t, func(c *api.Config) {
		c.MetricsHandler = http.NotFoundHandler()
		c.RateLimit, c.AuthFailureLimit = 1_000_000, 1_000_000
	})
	tok := demoToken(t, "acme-all")
	type probe struct{ method, path, auth, body string }
	var probes []probe
	for path, methods := range operationPaths(t) {
		for _, m := range methods {
			body := ""
			if m == http.MethodPost {
				body = `{"passenger_name":"Hygiene"}`
			}
			probes = append(probes,
				probe{m, path, "Bearer " + tok, body},                         // success (or 404 for an unknown row)
				probe{m, path, "", body},                                      // 401
				probe{m, path, "Bearer flt_" + strings.Repeat("0", 32), body}, // 401 INVALID_TOKEN
				probe{m, path + "?zz=1", "Bearer " + tok, body},               // 400 on lists
				probe{http.MethodDelete, path, "Bearer " + tok, ""},           // 405
			)
		}
	}
	probes = append(probes,
		probe{http.MethodGet, "/api/v2/nope", "", ""},
		probe{http.MethodGet, "/", "", ""},
		probe{http.MethodGet, "/api/v2//events", "Bearer " + tok, ""},
		probe{http.MethodGet, "/api/v2/openapi.json", "", ""},
		probe{http.MethodGet, "/api/v2/docs", "", ""},
		probe{http.MethodGet, "/api/v2/docs/nope.js", "", ""},
		probe{http.MethodGet, "/healthz", "", ""},
		probe{http.MethodGet, "/readyz", "", ""},
		probe{http.MethodGet, "/metrics", "", ""},
	)
	// Every asset the docs page loads.
	page := a.raw(httptest.NewRequest(http.MethodGet, "/api/v2/docs", nil))
	for _, part := range strings.Split(page.Body.String(), `"`) {
		if strings.HasPrefix(part, "docs/") {
			probes = append(probes, probe{http.MethodGet, "/api/v2/" + part, "", ""})
		}
	}
	statuses := map[int]bool{}
	for _, p := range probes {
		req := httptest.NewRequest(p.method, p.path, strings.NewReader(p.body))
		if p.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if p.auth != "" {
			req.Header.Set("Authorization", p.auth)
		}
		rec := a.raw(req)
		statuses[rec.Code] = true
		h := rec.Result().Header
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (auth %t): status %d, X-Content-Type-Options %q", p.method, p.path, p.auth != "", rec.Code, got)
		}
		if got := h.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
			t.Errorf("%s %s (auth %t): status %d, Cache-Control %q", p.method, p.path, p.auth != "", rec.Code, got)
		}
	}
	var seen []int
	for s := range statuses {
		seen = append(seen, s)
	}
	sort.Ints(seen)
	for _, want := range []int{200, 201, 400, 401, 404, 405} {
		if !statuses[want] {
			t.Errorf("no probe answered %d (answered %v): the test lost part of its class", want, seen)
		}
	}
}

// TestNonCanonicalPaths checks that every spelling of a route other than
// its own — empty, "." and ".." segments, encoded slashes and dots, any
// percent-encoding the path does not need — answers the JSON 404
// envelope, never a redirect, for every route of the document and the
// routes around it.
func TestNonCanonicalPaths(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.MetricsHandler = http.NotFoundHandler() })
	tok := demoToken(t, "acme-all")
	var paths []string
	for p := range operationPaths(t) {
		paths = append(paths, p)
	}
	paths = append(paths, "/api/v2/openapi.json", "/api/v2/docs", "/healthz", "/readyz", "/metrics")
	sort.Strings(paths)
	// variants spells p otherwise; each variant names its form.
	variants := func(p string) map[string]string {
		segs := strings.Split(p[1:], "/")
		last := len(segs) - 1
		join := func(s []string) string { return "/" + strings.Join(s, "/") }
		with := func(i int, s ...string) string { // insert s before segment i
			out := append(append(append([]string{}, segs[:i]...), s...), segs[i:]...)
			return join(out)
		}
		v := map[string]string{
			"leading double slash":     "/" + p,
			"double slash before last": with(last, ""),
			"trailing double slash":    p + "//",
			"dot segment":              with(last, "."),
			"trailing dot":             p + "/.",
			"dot-dot segment":          with(last, "x", ".."),
			"trailing dot-dot":         p + "/x/..",
			"encoded dot":              with(last, "%2e"),
			"encoded dot-dot":          with(last, "x", "%2E%2E"),
			"half-encoded dot-dot":     with(last, "x", ".%2e"),
			"encoded first letter":     join(append(append([]string{}, segs[:last]...), "%"+strings.ToUpper(hex2(segs[last][0]))+segs[last][1:])),
		}
		if last > 0 {
			v["encoded slash"] = join(segs[:last]) + "%2F" + segs[last]
			v["encoded slash, lower case"] = join(segs[:last]) + "%2f" + segs[last]
		}
		return v
	}
	for _, p := range paths {
		for form, target := range variants(p) {
			for _, auth := range []string{"", "Bearer " + tok} {
				req := httptest.NewRequest(http.MethodGet, target, nil)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				rec := a.raw(req)
				var env struct {
					Success *bool `json:"success"`
					Error   struct {
						Code string `json:"code"`
					} `json:"error"`
					Meta struct {
						RequestID string `json:"request_id"`
					} `json:"meta"`
				}
				err := json.Unmarshal(rec.Body.Bytes(), &env)
				if rec.Code != http.StatusNotFound || err != nil || env.Success == nil || *env.Success || env.Error.Code != "NOT_FOUND" ||
					env.Meta.RequestID != rec.Header().Get("X-Request-Id") || rec.Header().Get("Location") != "" ||
					rec.Header().Get("Content-Type") != "application/json" {
					t.Errorf("%s (%s of %s, auth %t): %d Location %q Content-Type %q: %s", target, form, p, auth != "",
						rec.Code, rec.Header().Get("Location"), rec.Header().Get("Content-Type"), rec.Body.Bytes())
				}
			}
		}
	}
	// The canonical spellings still work.
	for _, p := range []string{"/api/v2/me", "/api/v2/events/1", "/healthz"} {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if rec := a.raw(req); rec.Code != http.StatusOK {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
}

func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}
