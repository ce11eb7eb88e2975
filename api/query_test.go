package api_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// newBulkTestAPI is the test API with a token budget for the thousands of
// requests of the tests that enumerate a class of inputs.
func newBulkTestAPI(t testing.TB) *testAPI {
	t.Helper()
	return newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
}

// wantInvalidParam checks that res is 400 INVALID_PARAMETER naming param,
// with a reason.
func wantInvalidParam(t *testing.T, res response, param string) {
	t.Helper()
	if res.status != http.StatusBadRequest || res.errorCode(t) != "INVALID_PARAMETER" {
		t.Fatalf("status %d, want 400 INVALID_PARAMETER naming %q: %s", res.status, param, res.raw)
	}
	details, _ := res.body["error"].(map[string]any)["details"].(map[string]any)
	if details["parameter"] != param {
		t.Fatalf("details.parameter %q, want %q: %s", details["parameter"], param, res.raw)
	}
	if reason, _ := details["reason"].(string); reason == "" {
		t.Fatalf("no details.reason: %s", res.raw)
	}
}

// doRaw sends a request whose query string is raw, byte for byte (not
// re-encoded by a URL parser).
func (a *testAPI) doRaw(method, path, rawQuery, body, token string) response {
	a.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.URL.RawQuery = rawQuery
	req.RequestURI = path + "?" + rawQuery
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	checkContract(a.t, req, rec)
	res := response{status: rec.Code, header: rec.Result().Header, raw: rec.Body.Bytes()}
	if res.status == http.StatusNoContent && len(res.raw) == 0 {
		return res // a write that succeeded (DELETE /webhooks/1 of the webhook POST /webhooks?&& made): no body
	}
	if err := json.Unmarshal(res.raw, &res.body); err != nil {
		a.t.Fatalf("%s %s?%s: body is not a JSON object: %v: %q", method, path, rawQuery, err, res.raw)
	}
	return res
}

// routeBodies are the request bodies of the routes that take one.
var routeBodies = map[string]string{
	"POST /passengers":                  `{"passenger_name":"Query string test"}`,
	"POST /accounts":                    `{"username":"query-test","type":"user"}`,
	"PATCH /accounts/{id}":              `{"email":"query@test.example"}`,
	"POST /tokens":                      `{"name":"query-test","permissions":["GET /me"]}`,
	"DELETE /tokens/{id}":               ``,
	"DELETE /accounts/{id}":             ``,
	"PUT /accounts/{id}/objects":        `{"imei":[]}`,
	"POST /objects":                     `{"imei":"query-test","account_id":1}`,
	"PATCH /objects/{id}":               `{"account_id":1}`,
	"POST /readings":                    `{"readings":[{"imei":"query-test","time":"2027-01-01T00:00:00Z"}]}`,
	"POST /webhooks":                    `{"url":"https://hooks.acme.example/query-test"}`,
	"PATCH /webhooks/{id}":              `{"description":"query test"}`,
	"DELETE /webhooks/{id}":             ``,
	"POST /webhooks/{id}/rotate-secret": ``,
	"POST /webhooks/{id}/test":          ``,
	"POST /webhooks/{id}/deliveries/{delivery_id}/retry": ``,
	"POST /zones":              `{"name":"query-test","kind":"circle","center":{"lat":1,"lon":2},"radius_m":100}`,
	"PATCH /zones/{id}":        `{"name":"query test"}`,
	"DELETE /zones/{id}":       ``,
	"POST /events":             `{"type":"sos","name":"query-test"}`,
	"PATCH /events/{id}":       `{"active":false}`,
	"DELETE /events/{id}":      ``,
	"POST /services":           `{"imei":"query-test","name":"query-test"}`,
	"PATCH /services/{id}":     `{"odo":false}`,
	"DELETE /services/{id}":    ``,
	"POST /services/{id}/done": `{}`,
	"POST /reports":            `{"name":"query-test"}`,
	"PATCH /reports/{id}":      `{"speed_limit":80}`,
	"DELETE /reports/{id}":     ``,
}

// everyRoute is one call of each route of the client API (tenancy.Routes:
// every path parameter is 1), to which the tests append query strings; query
// is false for the routes that take no query parameters (all but the
// lists). A route that takes a body and has none in routeBodies fails.
func everyRoute(t *testing.T) []struct {
	method, path, body string
	query              bool
} {
	t.Helper()
	var out []struct {
		method, path, body string
		query              bool
	}
	for _, r := range tenancy.Routes() {
		body, ok := routeBodies[r.String()]
		if !ok && r.Method != http.MethodGet {
			t.Fatalf("%s takes a body: add one to routeBodies", r)
		}
		path := api.BasePath + strings.NewReplacer("{id}", "1", "{delivery_id}", "1").Replace(r.Template)
		query := slices.ContainsFunc(listRoutes, func(l listRouteCase) bool {
			return r.Method == http.MethodGet && l.path == path
		})
		out = append(out, struct {
			method, path, body string
			query              bool
		}{r.Method, path, body, query})
	}
	return out
}

// TestMalformedQueryStringIsRejected enumerates the query strings that Go's
// url.ParseQuery drops silently (a pair holding ";", every malformed
// percent escape in a name or a value) on every route: each is 400
// INVALID_PARAMETER naming the parameter, never a request with the pair
// left out.
func TestMalformedQueryStringIsRejected(t *testing.T) {
	a := newBulkTestAPI(t)
	tok := demoToken(t, "acme-all")
	malformed := []struct{ raw, param string }{
		// ";" is no separator: the whole pair used to vanish.
		{"name=X;", "name"}, {"name=X;Y", "name"}, {"name=1;page=2", "name"}, {"name;page=1", "name"},
		{"name;", "name"}, {";", ""}, {";name=x", ""}, {"name=%3B;", "name"}, {"page=1&name=x;", "name"},
		// Malformed escapes in the value.
		{"name=%", "name"}, {"name=x%", "name"}, {"name=%4", "name"}, {"name=%zz", "name"}, {"name=%g0", "name"},
		{"name=%0g", "name"}, {"name=%%", "name"}, {"name=%%41", "name"}, {"name=%-1", "name"}, {"name=%+1", "name"},
		{"name=%Z", "name"}, {"name=abc%4", "name"}, {"name=%u0041", "name"},
		// Malformed escapes in the name: the raw name is given.
		{"%zz=1", "%zz"}, {"%=1", "%"}, {"na%4=1", "na%4"}, {"%zz", "%zz"}, {"name%=x", "name%"},
		// The bad pair is found wherever it is.
		{"name=%zz&page=1", "name"}, {"page=1&name=%zz", "name"}, {"bogus=1&name=%zz", "name"},
	}
	for _, r := range everyRoute(t) {
		for _, m := range malformed {
			t.Run(r.method+" "+r.path+"?"+m.raw, func(t *testing.T) {
				wantInvalidParam(t, a.doRaw(r.method, r.path, m.raw, r.body, tok), m.param)
			})
		}
	}
	lists := []struct{ raw, param string }{
		{"imei=X;", "imei"}, {"search=zzzz;", "search"}, {"imei=%zz", "imei"}, {"search=%", "search"},
		{"per_page=5&imei=%", "imei"}, {"page=2;", "page"}, {"search=ab%2", "search"}, {"sort=name;", "sort"},
	}
	for _, r := range listRoutes {
		for _, m := range lists {
			t.Run(r.path+"?"+m.raw, func(t *testing.T) {
				wantInvalidParam(t, a.doRaw(http.MethodGet, r.path, m.raw, "", tok), m.param)
			})
		}
	}
	// Well-formed queries on the routes that take none stay "unknown
	// parameter"; empty pairs carry nothing and are not parameters.
	for _, r := range everyRoute(t) {
		if r.query {
			continue
		}
		t.Run(r.path+" unknown", func(t *testing.T) {
			wantInvalidParam(t, a.doRaw(r.method, r.path, "x=%41", r.body, tok), "x")
		})
		t.Run(r.path+" empty pairs", func(t *testing.T) {
			if strings.HasSuffix(r.path, "/stream") {
				// A stream stays open under the recorder: its answer is
				// read from its header over a real connection, then closed.
				srv := httptest.NewServer(a.handler)
				defer srv.Close()
				req, err := http.NewRequest(r.method, srv.URL+r.path+"?&&", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+tok)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("status %d, %s", res.StatusCode, res.Header.Get("Content-Type"))
				}
				return
			}
			// Not a parameter error (what the route answers for its body
			// and id, a 403 or 404 of the management routes say, is not
			// about the query) and never a server error.
			res := a.doRaw(r.method, r.path, "&&", r.body, tok)
			if res.status >= 500 || res.status == http.StatusBadRequest && res.errorCode(t) == "INVALID_PARAMETER" {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
		})
	}
}

// nonCanonicalInts are integer forms that strconv and PostgreSQL would take
// but that are not the canonical decimal form.
var nonCanonicalInts = []string{
	"01", "00", "007", "+1", "%2B1", "-0", "+0", "%201", "1%20", "%091", "1%0A",
	"1e2", "1E2", "0x10", "0X10", "0b1", "0o7", "1.0", "1.", ".5", "1_000", "1,000", "%EF%BC%91", /* fullwidth 1 */
	"", "-", "--1", "1-", "%00", "one", "NaN", "Infinity",
}

// TestNonCanonicalNumbersAreRejected enumerates the non-canonical integer
// forms on every integer query parameter and integer filter of every list
// and on the event id in the path, and the out-of-range values of each
// (the column's type and CHECK constraint bound a filter).
func TestNonCanonicalNumbersAreRejected(t *testing.T) {
	a := newBulkTestAPI(t)
	tok := demoToken(t, "admin-all")
	type intParam struct {
		path, name string
		lo, hi     string // the accepted extremes
		out        []string
	}
	params := []intParam{}
	for _, r := range listRoutes {
		params = append(params,
			intParam{r.path, "page", "1", "2147483647", []string{"0", "-1", "2147483648", "9223372036854775808"}},
			intParam{r.path, "per_page", "1", "500", []string{"0", "-1", "501", "2147483648"}})
	}
	// The management lists (docs/design.md §9) are listed under the management
	// scope, not as tenant resources; the comparison with the published
	// parameters below fails if one is missing here.
	// The devices granted to a subaccount are asked of a real one.
	sub := fmt.Sprint(a.accountID(t, "acme-night"))
	managementLists := []struct {
		path    string
		listing *storage.Descriptor
	}{{api.BasePath + "/accounts", storage.Accounts.Descriptor}, {api.BasePath + "/audit-events", storage.AuditEvents.Descriptor},
		{api.BasePath + "/tokens", storage.Tokens.Descriptor},
		{api.BasePath + "/accounts/" + sub + "/objects", storage.Objects.Descriptor}}
	for _, l := range managementLists {
		params = append(params,
			intParam{l.path, "page", "1", "2147483647", []string{"0", "-1", "2147483648", "9223372036854775808"}},
			intParam{l.path, "per_page", "1", "500", []string{"0", "-1", "501", "2147483648"}})
	}
	// GET /usage (docs/design.md §12): its page and its account_id (the admin's
	// own account is 1; a larger one is 404, not a parameter error).
	usage := api.BasePath + "/usage"
	params = append(params,
		intParam{usage, "page", "1", "2147483647", []string{"0", "-1", "2147483648", "9223372036854775808"}},
		intParam{usage, "per_page", "1", "500", []string{"0", "-1", "501", "2147483648"}},
		intParam{usage, "account_id", "1", "1", []string{"0", "-1", "-9223372036854775808", "9223372036854775808", "99999999999999999999999"}})
	// GET /objects/{id}/positions (docs/design.md §14): per_page 1..500.
	params = append(params, intParam{api.BasePath + "/objects/" + sub + "/positions", "per_page", "1", "500", []string{"0", "-1", "501", "2147483648"}})
	// GET /webhooks/{id}/deliveries (docs/design.md §14): page and per_page,
	// asked of a real webhook whose id is the path's (the demo data's, or
	// one the admin registers).
	deliveries := api.BasePath + "/webhooks/" + sub + "/deliveries"
	for a.doRaw(http.MethodGet, deliveries, "", "", tok).status == http.StatusNotFound {
		if id := idOf(t, a.createWebhook(t, tok, `{"url":"https://hooks.acme.example/numbers"}`)); id > a.accountID(t, "acme-night") {
			t.Fatalf("webhook %d registered past %s", id, sub)
		}
	}
	params = append(params,
		intParam{deliveries, "page", "1", "2147483647", []string{"0", "-1", "2147483648", "9223372036854775808"}},
		intParam{deliveries, "per_page", "1", "500", []string{"0", "-1", "501", "2147483648"}})
	for _, l := range append(append(managementLists[:0:0], listings...), managementLists...) {
		for _, f := range l.listing.Fields() {
			switch f.Kind {
			case storage.KindInt32:
				params = append(params, intParam{l.path, f.Name, "0", "2147483647",
					[]string{"-1", "-2147483648", "2147483648", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "99999999999999999999999"}})
			case storage.KindInt:
				params = append(params, intParam{l.path, f.Name, "0", "9223372036854775807",
					[]string{"-1", "-9223372036854775808", "9223372036854775808", "-9223372036854775809", "99999999999999999999999"}})
			}
		}
	}
	// exactly the integer query parameters the OpenAPI document publishes
	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	var published, tested []string
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value.In == "query" && p.Value.Schema != nil && p.Value.Schema.Value.Type.Is("integer") {
					published = append(published, api.BasePath+strings.ReplaceAll(path, "{id}", sub)+"?"+p.Value.Name)
				}
			}
		}
	}
	for _, p := range params {
		tested = append(tested, p.path+"?"+p.name)
	}
	slices.Sort(published)
	slices.Sort(tested)
	if len(published) == 0 || !slices.Equal(published, tested) {
		t.Fatalf("integer parameters tested %v\npublished %v", tested, published)
	}
	for _, p := range params {
		for _, v := range append(append([]string{}, nonCanonicalInts...), p.out...) {
			t.Run(p.path+"?"+p.name+"="+v, func(t *testing.T) {
				wantInvalidParam(t, a.doRaw(http.MethodGet, p.path, p.name+"="+v, "", tok), p.name)
			})
		}
		for _, v := range []string{p.lo, p.hi} {
			t.Run(p.path+"?"+p.name+"="+v, func(t *testing.T) {
				if res := a.doRaw(http.MethodGet, p.path, p.name+"="+v, "", tok); res.status != http.StatusOK {
					t.Fatalf("status %d: %s", res.status, res.raw)
				}
			})
		}
	}
	// The path id: minimum 1, canonical decimal.
	ids := append(append([]string{}, nonCanonicalInts...), "0", "-1", "9223372036854775808", "99999999999999999999")
	for _, id := range ids {
		if id == "" {
			continue // "/events/" is another route
		}
		t.Run("/events/"+id, func(t *testing.T) {
			// Parsed as the server parses a request line, so that RawPath
			// is set exactly when the client's escaping is not Go's own.
			req := httptest.NewRequest(http.MethodGet, "/api/v2/events/"+id, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			rec := httptest.NewRecorder()
			a.handler.ServeHTTP(rec, req)
			res := response{status: rec.Code, header: rec.Result().Header, raw: rec.Body.Bytes()}
			if err := json.Unmarshal(res.raw, &res.body); err != nil {
				t.Fatalf("body: %v: %q", err, res.raw)
			}
			checkContract(t, req, rec)
			if req.URL.RawPath != "" {
				// An escape Go would not write ("%2B" for "+") makes the
				// path non-canonical: no route, before any parameter.
				if res.status != http.StatusNotFound || res.errorCode(t) != "NOT_FOUND" {
					t.Fatalf("non-canonical path: status %d, want 404 NOT_FOUND: %s", res.status, res.raw)
				}
				return
			}
			wantInvalidParam(t, res, "id")
		})
	}
	if res := a.get("/api/v2/events/1", tok); res.status != http.StatusOK {
		t.Fatalf("/events/1: status %d: %s", res.status, res.raw)
	}
	if res := a.get("/api/v2/events/9223372036854775807", tok); res.status != http.StatusNotFound {
		t.Fatalf("/events/9223372036854775807: status %d, want 404: %s", res.status, res.raw)
	}
}

// filterCases are, per filter kind, values the database would refuse or
// read as another question (raw, already percent-encoded), and values at
// the edges of the accepted range.
var filterCases = map[storage.FieldKind]struct{ bad, good []string }{
	storage.KindBool: {
		bad:  []string{"TRUE", "True", "FALSE", "1", "0", "t", "f", "yes", "no", "on", "", "true%20", "%20true", "+true", "true%00"},
		good: []string{"true", "false"},
	},
	storage.KindDate: {
		bad: []string{
			"0000-01-01", "0000-12-31", "-0001-01-01", "-2024-01-01", "10000-01-01", "99999-12-31", "+2024-01-01",
			"2024-13-01", "2024-00-10", "2024-01-32", "2024-01-00", "2023-02-29", "2024-02-30", "2024-04-31",
			"2024-1-01", "2024-01-1", "24-01-01", "2024/01/01", "20240101", "2024-01-01T00:00:00Z", "2024-01-01%20",
			"%202024-01-01", "2024-01-01+", "%EF%BC%92024-01-01", "infinity", "-infinity", "epoch", "today", "2024-01-01%00", "",
		},
		good: []string{"0001-01-01", "9999-12-31", "2024-02-29"},
	},
	storage.KindTime: {
		bad: []string{
			// Out of range, directly or once in UTC.
			"0000-01-01T00:00:00Z", "0001-01-01T00:00:00%2B00:01", "0000-12-31T23:59:59Z", "9999-12-31T23:59:59-00:01",
			"10000-01-01T00:00:00Z", "-0001-01-01T00:00:00Z", "294277-01-01T00:00:00Z",
			// Calendar and clock.
			"2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2024-01-32T00:00:00Z",
			"2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z", "2024-12-31T23:59:60Z", "2024-06-30T23:59:60Z", "2024-01-01T25:00:00Z",
			"2024-01-01T0:00:00Z", "2024-01-01T00:0:00Z", "2024-01-01T00:00:0Z", "2024-01-01T00:00Z", "2024-01-01T00Z",
			// Fractions: at most microseconds, "." only.
			"2024-01-01T00:00:00.1234567Z", "2024-01-01T00:00:00.0000001Z", "2024-01-01T00:00:00.123456789012345678901234567890Z",
			"2024-01-01T00:00:00,5Z", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00.%2B01:00",
			// Time zones.
			"2024-01-01T00:00:00", "2024-01-01T00:00:00%2B0100", "2024-01-01T00:00:00%2B01", "2024-01-01T00:00:00%2B24:00",
			"2024-01-01T00:00:00-24:00", "2024-01-01T00:00:00%2B16:00", "2024-01-01T00:00:00-23:59", "2024-01-01T00:00:00%2B01:60", "2024-01-01T00:00:00%2B99:99", "2024-01-01T00:00:00%2B01:00:00",
			"2024-01-01T00:00:00%20%2B01:00", "2024-01-01T00:00:00UTC", "2024-01-01T00:00:00%20Z", "2024-01-01T00:00:00z",
			"2024-01-01T00:00:00GMT", "2024-01-01T00:00:00%2B1:00", "2024-01-01T00:00:00Z%00",
			// Other layouts.
			"2024-01-01", "2024-01-01t00:00:00Z", "2024-01-01%2000:00:00Z", "2024-01-01T00:00:00%2B01:00Z", "1704067200",
			"infinity", "now", "",
		},
		good: []string{
			"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "0001-01-01T01:00:00%2B01:00", "9999-12-31T22:59:59-01:00",
			"2026-01-05T08:00:00%2B01:00", "2026-01-05T07:00:00-00:00", "2026-01-05T07:00:00.5Z", "2024-01-01T00:00:00%2B15:59", "2024-01-01T00:00:00-15:59",
		},
	},
	storage.KindText: {
		bad: []string{
			"%00", "a%00b", "%FF", "a%FFb", "%C3%28", "%ED%A0%80" /* a surrogate */, "%C0%80" /* overlong NUL */, "%F4%90%80%80", /* past U+10FFFF */
			"%E2%82", "%80", "%F0%9F%98",
		},
		good: []string{"", "%C3%A9", "%E2%80%A8", "%F0%9F%98%80", "%5C", "%27", "a%25_b", "%7B%7D"},
	},
	storage.KindObject: {
		bad: []string{
			`{"a":"\u0000"}`, `{"\u0000":1}`, `{"a":"x\u0000y"}`, `{"a":["\u0000"]}`, `{"a":{"b":"\u0000"}}`,
			`{"a":"\\\u0000"}`, `{"a":"\ud800"}`, `{"a":"\udc00"}`, `{"a":"\ud800x"}`, `{"a":"\ud800\u0041"}`, `{"a":"\ud800\ud800"}`,
			`{"\udfff":1}`, `{"a":1e1000000}`, `{"a":1e-1000000}`, `{"a":1e1001}`, `{"a":-1e1001}`, `{"a":1e-1001}`,
			`{"a":1` + strings.Repeat("0", 1000) + `}`, `{"a":0.` + strings.Repeat("0", 1000) + `1}`,
			`null`, `[]`, `"x"`, `1`, `true`, `{"a":1}x`, `{"a":1}{}`, `{`, `{"a":NaN}`, `{'a':1}`, ``, `{"a":1,}`, `{"a":01}`,
			"{\"a\":\"\x00\"}", "{\"a\":\"\xff\"}",
		},
		good: []string{
			`{}`, `{"a":"\u00e9"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\\u0000"}`, `{"a":"\\\\u0000"}`, `{"a":1e1000}`, `{"a":-1e-1000}`,
			`{"a":12345678901234567890}`, `{"from":"08:00"}`, `{"a":[1,{"b":null}],"c":true}`,
		},
	},
}

// rawValue percent-encodes a case of filterCases for the query string:
// object cases are JSON text and are escaped whole; the others are given
// already encoded.
func rawValue(k storage.FieldKind, v string) string {
	if k == storage.KindObject {
		return url.QueryEscape(v)
	}
	return v
}

// listings are the lists (every resource with listed fields, from the
// registry) and their paths.
var listings = func() []struct {
	path    string
	listing *storage.Descriptor
} {
	var out []struct {
		path    string
		listing *storage.Descriptor
	}
	for _, d := range storage.Descriptors() {
		if d.Listed() {
			out = append(out, struct {
				path    string
				listing *storage.Descriptor
			}{api.BasePath + "/" + string(d.Resource()), d})
		}
	}
	return out
}()

// TestFilterValuesTheDatabaseRefuses sends every malformed value of its
// kind to every filter of every list: each is 400 INVALID_PARAMETER naming
// the filter before the database is asked (never a 500 from PostgreSQL),
// and the values at the edges of the accepted range are answered.
func TestFilterValuesTheDatabaseRefuses(t *testing.T) {
	a := newBulkTestAPI(t)
	tok := demoToken(t, "admin-all")
	for _, l := range listings {
		for _, f := range l.listing.Fields() {
			kind := f.Kind
			if kind == storage.KindTextList {
				kind = storage.KindText
			}
			cases, ok := filterCases[kind]
			if !ok {
				continue // the integer kinds: TestNonCanonicalNumbersAreRejected
			}
			// The field's parameters: its exact-match filter, and from and
			// to on the range field (the range extension).
			var params []string
			if f.Filter {
				params = append(params, f.Name)
			}
			if f.Range {
				params = append(params, "from", "to")
			}
			for _, param := range params {
				for _, v := range cases.bad {
					t.Run(l.path+"?"+param+"="+v, func(t *testing.T) {
						wantInvalidParam(t, a.doRaw(http.MethodGet, l.path, param+"="+rawValue(kind, v), "", tok), param)
					})
				}
				for _, v := range cases.good {
					t.Run(l.path+"?"+param+"="+v, func(t *testing.T) {
						if res := a.doRaw(http.MethodGet, l.path, param+"="+rawValue(kind, v), "", tok); res.status != http.StatusOK {
							t.Fatalf("status %d: %s", res.status, res.raw)
						}
					})
				}
			}
		}
	}
}

// TestFiltersAskExactlyTheQuestion checks that an accepted filter value
// reaches the database unchanged: a JSON number keeps all its digits (not
// rounded to a float64) and a timestamp keeps its microseconds.
func TestFiltersAskExactlyTheQuestion(t *testing.T) {
	a := newBulkTestAPI(t)
	tok := demoToken(t, "acme-all")
	a.exec(t, `INSERT INTO events (account_id, name, day_time) SELECT id, 'rounded', '{"n":12345678901234567000}' FROM accounts WHERE username = 'acme'`)
	a.exec(t, `INSERT INTO events (account_id, name, day_time) SELECT id, 'exact', '{"n":12345678901234567891}' FROM accounts WHERE username = 'acme'`)
	a.exec(t, `INSERT INTO reports (account_id, name, dt_schedule_d) SELECT id, 'micro', '2026-01-05T07:00:00.000001Z' FROM accounts WHERE username = 'acme'`)
	tests := []struct{ path, query, want string }{
		{"/api/v2/events", "day_time=" + url.QueryEscape(`{"n":12345678901234567891}`), "exact"},
		{"/api/v2/events", "day_time=" + url.QueryEscape(`{"n":12345678901234567000}`), "rounded"},
		{"/api/v2/events", "day_time=" + url.QueryEscape(`{"n":1.2345678901234567e19}`), "rounded"},
		{"/api/v2/reports", "dt_schedule_d=2026-01-05T07:00:00.000001Z", "micro"},
		{"/api/v2/reports", "dt_schedule_d=2026-01-05T08:00:00.000001%2B01:00", "micro"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			items, _ := a.list(t, tt.path+"?"+tt.query, tok)
			if len(items) != 1 || items[0]["name"] != tt.want {
				t.Fatalf("got %v, want only %q", items, tt.want)
			}
		})
	}
}

// fragments are the pieces random filter values are made of: separators,
// escapes (good and malformed), signs, digits, date and time parts, JSON
// and text the database refuses.
var fragments = []string{
	"", "0", "1", "9", "00", "99", "0000", "9999", "10000", "2147483648", "9223372036854775808", "-", "+", "%2B", "%2D",
	".", ",", ":", "T", "Z", "z", "t", "e", "E", "x", "-01", "-12-31", "-02-30", "T23:59:60", "T24:00:00", ".1234567",
	"%00", "%FF", "%C0%80", "%ED%A0%80", "%", "%4", "%zz", "%25", "%20", "+", ";", "&", "=", "&page=1", "&x=1",
	"true", "false", "TRUE", "null", "{", "}", "[", "]", `"`, "%22", "%5Cu0000", "%5Cud800", "%5C", "%7B%22a%22:", "1e1000000",
	"%7B%7D", "%7B%22a%22:%22%5Cu0000%22%7D", "%7B%22a%22:1e99999%7D", "é", "%C3%A9", "'", "%27", "_",
}

// TestRandomFilterValuesNeverFail sends random values, made of fragments,
// to every filter and shared parameter of every list: the answer is 200 or
// 400 INVALID_PARAMETER, never a 500.
func TestRandomFilterValuesNeverFail(t *testing.T) {
	a := newBulkTestAPI(t)
	tok := demoToken(t, "admin-all")
	rng := rand.New(rand.NewSource(10))
	perField := 12
	if isCI() {
		perField = 30
	}
	for _, l := range listings {
		names := []string{"page", "per_page", "search", "sort", "order"}
		for _, f := range l.listing.Fields() {
			names = append(names, f.Name)
		}
		for _, name := range names {
			for range perField {
				var b strings.Builder
				for n := rng.Intn(6); n >= 0; n-- {
					b.WriteString(fragments[rng.Intn(len(fragments))])
				}
				raw := name + "=" + b.String()
				res := a.doRaw(http.MethodGet, l.path, raw, "", tok)
				checkNoFailure(t, l.path, raw, res)
			}
		}
	}
}

// checkNoFailure checks that res is 200, or 400 INVALID_PARAMETER naming
// a parameter with a reason.
func checkNoFailure(t *testing.T, path, raw string, res response) {
	t.Helper()
	switch res.status {
	case http.StatusOK:
		return
	case http.StatusBadRequest:
		if res.errorCode(t) != "INVALID_PARAMETER" {
			break
		}
		details, _ := res.body["error"].(map[string]any)["details"].(map[string]any)
		if _, ok := details["parameter"].(string); !ok {
			break
		}
		if reason, _ := details["reason"].(string); reason == "" {
			break
		}
		return
	}
	t.Fatalf("%s?%s: status %d: %s", path, raw, res.status, res.raw)
}

// FuzzListQuery sends arbitrary raw query strings to the lists over the
// real router and database: never a 500, and never a 200 for a query that
// url.ParseQuery cannot read completely.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{
		"imei=X;", "search=zzzz;", "name=%zz", "name=%", "page=01", "per_page=%205", "page=1e2",
		"days_last=0000-01-01", "dt_schedule_d=0000-01-01T00:00:00Z", "dt_schedule_d=2024-12-31T23:59:60Z",
		"day_time=%7B%22a%22%3A%22%5Cu0000%22%7D", "day_time=%7B%22a%22%3A1e1000000%7D", "odo_interval=2147483648",
		"email_template_id=9223372036854775808", "imei=%FF", "name=%00", "&&", "=", "a", "sort=name&order=desc",
	} {
		for i := range listings {
			f.Add(uint8(i), s)
		}
	}
	a := newBulkTestAPI(f)
	tok := demoToken(f, "admin-all")
	f.Fuzz(func(t *testing.T, list uint8, raw string) {
		b := *a
		b.t = t
		l := listings[int(list)%len(listings)]
		res := b.doRaw(http.MethodGet, l.path, raw, "", tok)
		checkNoFailure(t, l.path, raw, res)
		if _, err := url.ParseQuery(raw); err != nil && res.status == http.StatusOK {
			t.Fatalf("%s?%s: 200 for a query url.ParseQuery reads only in part (%v)", l.path, raw, err)
		}
	})
}
