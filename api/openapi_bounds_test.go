package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/storage"
)

// boundCase is one request of TestSchemaBoundsAccepted: the operation's
// base request with one parameter or body field set to a value at a bound
// of its schema.
type boundCase struct {
	op, what   string // "POST /tokens", "body rate_limit=1000000"
	method     string
	path       string
	query      url.Values
	headers    []string
	body       map[string]any
	ref        bool // the value names a row (an id, a device): it may not exist
	field      string
	value      any
	deleteCase bool
}

// boundBase is the valid request an operation's bound values are set in.
type boundBase struct {
	// body(n) is a body the server accepts (2xx), with every property of
	// the schema; unique per n where the server wants unique values.
	body func(n int) map[string]any
}

// bodyRefs are the body fields that name a row besides those named id or
// *_id: a device by IMEI.
var bodyRefs = map[string]bool{"PUT /accounts/{id}/objects imei[]": true}

// queryRefs are the query parameters that name a row (the others filter).
var queryRefs = map[string]bool{"GET /usage account_id": true}

// TestSchemaBoundsAccepted (issue 34): every rule the server enforces on a
// parameter or a body field is in the OpenAPI document. For every
// operation, every parameter and every body field (nested objects and
// list items included) is set, one at a time, to each value its schema
// allows at a bound — minimum and maximum, minLength and maxLength (the
// value also matching the pattern and format), every enum member, null,
// minItems and maxItems — in a request that is otherwise valid, checked
// valid against the document (JSON Schema 2020-12, formats included), and
// sent through the real router with the admin's token. The answer must
// be 2xx. A value that names a row (a path id, a body *_id, a device) may
// instead find none or the wrong one: 404 NOT_FOUND, 403 MANAGEMENT_DENIED,
// and for the grants of a non-subaccount 400 INVALID_PARAMETER id. The
// rules no schema can state are listed in boundExceptions, each with its
// exact answer; nothing else may answer 400.
func TestSchemaBoundsAccepted(t *testing.T) {
	a := newTestAPIWith(t, func(c *api.Config) { c.RateLimit = 1_000_000 })
	doc := loadOpenAPI(t, openAPIDoc(t))
	admin := demoToken(t, "admin-all")
	acme, night := a.accountID(t, "acme"), a.accountID(t, "acme-night")
	var owner int64 // device 1's owner: PATCH /objects/1 moves it to itself
	if err := a.db.NewRaw("SELECT account_id FROM objects WHERE id = 1").Scan(context.Background(), &owner); err != nil {
		t.Fatal(err)
	}
	// POST /accounts and /passengers as acme (a user creates subaccounts
	// under itself; its passengers are its own), the rest as the admin.
	tokens := map[string]string{"POST /accounts": demoToken(t, "acme-all"), "POST /passengers": demoToken(t, "acme-all")}
	bases := map[string]boundBase{
		"POST /accounts": {func(n int) map[string]any {
			return map[string]any{"username": fmt.Sprintf("bound-sub-%d", n), "email": "s@acme.example", "type": "subaccount",
				"manager_id": acme, "active": true, "read_only": false, "account_expire": false,
				"account_expire_dt": "2099-12-31", "privileges": []any{"reports"}, "rate_limit": 60}
		}},
		"PATCH /accounts/{id}": {func(int) map[string]any {
			return map[string]any{"email": "night@acme.example", "active": true, "read_only": false, "account_expire": false,
				"account_expire_dt": "2099-12-31", "privileges": []any{"reports"}, "rate_limit": 60, "quotas": map[string]any{"tokens": 5}}
		}},
		"PUT /accounts/{id}/objects": {func(int) map[string]any { return map[string]any{"imei": []any{"356938035643809"}} }},
		"POST /objects": {func(n int) map[string]any {
			return map[string]any{"imei": fmt.Sprintf("BOUND-%d", n), "name": "Crane", "account_id": acme, "odometer": 1, "engine_hours": 2}
		}},
		"PATCH /objects/{id}": {func(int) map[string]any { return map[string]any{"account_id": owner} }},
		"POST /passengers": {func(n int) map[string]any {
			return map[string]any{"passenger_name": "Bound Case", "passenger_assign_id": fmt.Sprintf("BC-%d", n), "passenger_idn": "idn",
				"passenger_address": "1 Road", "passenger_phone": "+100", "passenger_email": "p@acme.example", "passenger_desc": "d",
				"passenger_client_id": "c", "passenger_active": true, "passenger_pickup_point_id": 3}
		}},
		"POST /tokens": {func(n int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("bound-%d", n), "permissions": []any{"GET /me"}, "account_id": acme,
				"expires_at": "2099-01-01T00:00:00Z", "rate_limit": 10}
		}},
	}
	pathValues := map[string]int64{"PATCH /accounts/{id}": night, "PUT /accounts/{id}/objects": night, "GET /accounts/{id}/objects": night}

	g := &boundGen{used: map[string]bool{}, patterns: map[string]*regexp.Regexp{}}
	var cases []boundCase
	n := 0
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		ops := doc.Paths.Value(path).Operations()
		for _, method := range slices.Sorted(func(yield func(string) bool) {
			for m := range ops {
				if !yield(m) {
					return
				}
			}
		}) {
			op := ops[method]
			name := method + " " + path
			var bodySchema *openapi3.Schema
			var base boundBase
			if op.RequestBody != nil {
				bodySchema = op.RequestBody.Value.Content.Get("application/json").Schema.Value
				var ok bool
				if base, ok = bases[name]; !ok {
					t.Fatalf("%s takes a body: add its base body to this test", name)
				}
			}
			pathParams := map[string]string{}
			for _, pr := range op.Parameters {
				if p := pr.Value; p.In == openapi3.ParameterInPath {
					v := fmt.Sprint(p.Example)
					if id, ok := pathValues[name]; ok {
						v = strconv.FormatInt(id, 10)
					}
					pathParams[p.Name] = v
				}
			}
			newCase := func(what string) boundCase {
				n++
				c := boundCase{op: name, what: what, method: method, query: url.Values{}, deleteCase: method == http.MethodDelete}
				c.path = path
				for k, v := range pathParams {
					c.path = strings.ReplaceAll(c.path, "{"+k+"}", v)
				}
				if base.body != nil {
					c.body = base.body(n)
				}
				return c
			}
			cases = append(cases, newCase("the base request"))
			for _, pr := range op.Parameters {
				p := pr.Value
				schema, jsonText := paramSchema(p)
				for _, v := range g.bounds(t, name+" "+p.Name, schema, false, p.In == openapi3.ParameterInHeader) {
					if err := visit(schema, v); err != nil {
						t.Fatalf("%s: the generated %s=%v is not valid: %v", name, p.Name, v, err)
					}
					c := newCase(fmt.Sprintf("%s %s=%s", p.In, p.Name, short(v)))
					c.field, c.value = p.Name, v
					text := paramText(v, jsonText)
					switch p.In {
					case openapi3.ParameterInPath:
						c.path = path
						for k, pv := range pathParams {
							if k == p.Name {
								pv = text
							}
							c.path = strings.ReplaceAll(c.path, "{"+k+"}", url.PathEscape(pv))
						}
						c.ref = true
					case openapi3.ParameterInQuery:
						c.query.Set(p.Name, text)
						c.ref = queryRefs[name+" "+p.Name]
					case openapi3.ParameterInHeader:
						c.headers = append(c.headers, p.Name, text)
					}
					cases = append(cases, c)
				}
			}
			if bodySchema == nil {
				continue
			}
			for _, f := range bodyFields(bodySchema, "") {
				for _, v := range g.bounds(t, name+" "+f.path, f.schema, true, false) {
					c := newCase("body " + f.path + "=" + short(v))
					c.field, c.value = f.path, v
					c.ref = strings.HasSuffix(f.path, "_id") || bodyRefs[name+" "+f.path]
					set := func(body map[string]any) { f.set(body, v) }
					set(c.body)
					if visit(bodySchema, c.body) != nil {
						// Another field of the base rules the value out (an
						// if/then of the document): the required fields only.
						minimal := map[string]any{}
						for _, r := range bodySchema.Required {
							minimal[r] = c.body[r]
						}
						set(minimal)
						c.body = minimal
					}
					if err := visit(bodySchema, c.body); err != nil {
						t.Fatalf("%s: the generated body %s is not valid: %v", name, short(c.body), err)
					}
					cases = append(cases, c)
				}
			}
		}
	}
	// The devices the grants name are acme's, the parent of acme-night
	// (unknown ones are device_not_owned: what exists is not the schema's
	// business, and a list at maxItems must be granted whole).
	for _, c := range cases {
		if c.op == "PUT /accounts/{id}/objects" {
			list, _ := c.body["imei"].([]any)
			for _, imei := range list {
				a.exec(t, "INSERT INTO objects (imei, account_id, name) VALUES (?, ?, '') ON CONFLICT DO NOTHING", imei, acme)
			}
		}
	}
	// The erases and revocations last, each with a token of its own: a
	// bound id may be the caller's own token or another case's account.
	sort.SliceStable(cases, func(i, j int) bool { return !cases[i].deleteCase && cases[j].deleteCase })
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.op] = true
		token := admin
		if tok, ok := tokens[c.op]; ok {
			token = tok
		}
		if c.deleteCase {
			secret, _, err := a.store.CreateToken(context.Background(), storage.NewToken{Username: "admin", Permissions: []string{"*"}})
			if err != nil {
				t.Fatal(err)
			}
			token = secret
		}
		target := api.BasePath + c.path
		if len(c.query) > 0 {
			target += "?" + c.query.Encode()
		}
		headers := append([]string{"Authorization", "Bearer " + token}, c.headers...)
		var body string
		if c.body != nil {
			raw, err := json.Marshal(c.body)
			if err != nil {
				t.Fatal(err)
			}
			body = string(raw)
			headers = append(headers, "Content-Type", "application/json")
		}
		res := a.do(c.method, target, strings.NewReader(body), headers...)
		if err := boundAnswer(c, res); err != nil {
			t.Errorf("%s, %s: %v: %d %s", c.op, c.what, err, res.status, res.raw)
		}
	}
	if ops := len(seen); ops < 22 {
		t.Fatalf("only %d operations exercised: the document was not read", ops)
	}
	t.Logf("%d requests at the bounds of %d operations", len(cases), len(seen))
}

// boundException is a rule no JSON Schema can state, and its answer.
type boundException struct {
	status int
	code   string
	check  func(details map[string]any) bool
}

// boundExceptions are the refusals of schema-valid values the document
// can only describe (docs/decisions.md, "The schema states every rule it
// can"), keyed by operation and field; match tells the values concerned.
func boundExceptions(c boundCase) (boundException, bool) {
	param := func(name, reason string) func(map[string]any) bool {
		return func(d map[string]any) bool {
			r, _ := d["reason"].(string)
			return d["parameter"] == name && strings.Contains(r, reason)
		}
	}
	switch {
	case c.field == "after":
		// A cursor is a server-made value: a made-up one fails its checksum.
		return boundException{http.StatusBadRequest, "INVALID_PARAMETER", param("after", "")}, true
	case c.op == "POST /tokens" && c.field == "expires_at" && c.value != nil && c.value.(string) < time.Now().UTC().Format(time.RFC3339):
		// In the future: relative to the time of the request.
		return boundException{http.StatusBadRequest, "VALIDATION_FAILED", func(d map[string]any) bool {
			f, _ := d["fields"].(map[string]any)
			return len(f) == 1 && f["expires_at"] != nil
		}}, true
	case c.op == "GET /usage" && c.field == "from" && c.value == "0001-01-01":
		// to defaults to today: more than 366 days after from.
		return boundException{http.StatusBadRequest, "INVALID_PARAMETER", param("to", "less than 366 days after from")}, true
	case c.op == "GET /usage" && c.field == "from" && c.value == "9999-12-31":
		// to defaults to today: before from.
		return boundException{http.StatusBadRequest, "INVALID_PARAMETER", param("from", "must not be after to")}, true
	case c.op == "POST /passengers" && c.field == "passenger_name" && c.value == "\U000e0001":
		// The one gap of the patterns: a name made only of invisible
		// characters beyond U+FFFF, which a portable class cannot hold
		// (charClass).
		return boundException{http.StatusBadRequest, "VALIDATION_FAILED", func(d map[string]any) bool {
			f, _ := d["fields"].(map[string]any)
			return len(f) == 1 && f["passenger_name"] != nil
		}}, true
	case c.op == "POST /accounts" && c.field == "type" && c.value != "subaccount":
		// The levels below the caller (a user: subaccounts) and nobody
		// creates an admin: the management policy, on the caller's type.
		return boundException{http.StatusForbidden, "MANAGEMENT_DENIED", func(d map[string]any) bool { return d["reason"] == "not_below_caller" }}, true
	}
	return boundException{}, false
}

// boundAnswer checks the answer res to c (see TestSchemaBoundsAccepted).
func boundAnswer(c boundCase, res response) error {
	code, details := "", map[string]any{}
	if e, ok := res.body["error"].(map[string]any); ok {
		code, _ = e["code"].(string)
		if d, ok := e["details"].(map[string]any); ok {
			details = d
		}
	}
	if ex, ok := boundExceptions(c); ok {
		if res.status != ex.status || code != ex.code || !ex.check(details) {
			return fmt.Errorf("want %d %s (a rule the schema cannot state)", ex.status, ex.code)
		}
		return nil
	}
	if res.status >= 200 && res.status < 300 {
		return nil
	}
	if c.ref {
		switch {
		case res.status == http.StatusNotFound && code == "NOT_FOUND",
			res.status == http.StatusForbidden && code == "MANAGEMENT_DENIED":
			return nil
		case res.status == http.StatusBadRequest && code == "INVALID_PARAMETER" && details["parameter"] == "id" &&
			strings.HasSuffix(c.op, "/accounts/{id}/objects"):
			return nil // an account that is not a subaccount has no grants
		case res.status == http.StatusBadRequest && code == "VALIDATION_FAILED" && c.op == "PATCH /accounts/{id}" && c.field == "id":
			// and no privileges
			f, _ := details["fields"].(map[string]any)
			if len(f) == 1 && f["privileges"] != nil {
				return nil
			}
		}
		return fmt.Errorf("want 2xx, or for a value naming a row 404 NOT_FOUND, 403 MANAGEMENT_DENIED or the 400 of a target of the wrong type")
	}
	return fmt.Errorf("want 2xx for a value the schema allows")
}

// bodyField is one field of a body schema at path ("quotas.devices",
// "imei[]" for the items of a list) and how to set it in a body.
type bodyField struct {
	path   string
	schema *openapi3.Schema
	set    func(body map[string]any, v any)
}

// bodyFields lists the fields of the object schema s: its properties, the
// properties of the objects they hold, and the items of its lists (set as
// a list of that one item).
func bodyFields(s *openapi3.Schema, prefix string) []bodyField {
	var out []bodyField
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for p := range s.Properties {
			if !yield(p) {
				return
			}
		}
	}) {
		p := s.Properties[name].Value
		out = append(out, bodyField{prefix + name, p, func(b map[string]any, v any) { b[name] = v }})
		if p.Type.Includes(openapi3.TypeObject) && len(p.Properties) > 0 {
			for _, f := range bodyFields(p, prefix+name+".") {
				out = append(out, bodyField{f.path, f.schema, func(b map[string]any, v any) {
					inner := map[string]any{}
					f.set(inner, v)
					b[name] = inner
				}})
			}
		}
		if p.Type.Includes(openapi3.TypeArray) && p.Items != nil {
			out = append(out, bodyField{prefix + name + "[]", p.Items.Value, func(b map[string]any, v any) { b[name] = []any{v} }})
		}
	}
	return out
}

// paramSchema is a parameter's schema, and whether its value is sent as
// JSON text (content application/json).
func paramSchema(p *openapi3.Parameter) (*openapi3.Schema, bool) {
	if p.Schema != nil {
		return p.Schema.Value, false
	}
	return p.Content.Get("application/json").Schema.Value, true
}

// paramText is a parameter value as sent.
func paramText(v any, jsonText bool) string {
	if s, ok := v.(string); ok && !jsonText {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// visit validates v against s as a client's validator would: JSON Schema
// 2020-12 (if/then, not, patterns) and kin-openapi's own checks, which
// assert the formats.
func visit(s *openapi3.Schema, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return err
	}
	if err := s.VisitJSON(generic, openapi3.EnableJSONSchema2020()); err != nil {
		return err
	}
	return s.VisitJSON(generic)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return fmt.Sprintf("%s… (%d bytes)", b[:40], len(b))
	}
	return string(b)
}

// boundGen makes the values at the bounds of a schema. Strings are unique
// across the test (a username, an IMEI or an Idempotency-Key is sent
// once).
type boundGen struct {
	used     map[string]bool
	patterns map[string]*regexp.Regexp
}

// matches reports whether v has s's length and pattern (the whole value
// is validated against the document before it is sent).
func (g *boundGen) matches(s *openapi3.Schema, v string) bool {
	n := uint64(len([]rune(v)))
	if n < s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
		return false
	}
	if s.Pattern == "" {
		return true
	}
	re, ok := g.patterns[s.Pattern]
	if !ok {
		re = regexp.MustCompile(s.Pattern)
		g.patterns[s.Pattern] = re
	}
	return re.MatchString(v)
}

// bounds returns the values s allows at its bounds, and the hard values
// it allows: an integer without a maximum at the largest integer of its
// format, a string without maxLength long, blank, with NUL or invisible
// characters, a date of the year 0000, a timestamp past the microsecond
// or out of PostgreSQL's offsets, a list without uniqueItems with a value
// twice. A rule the server enforces and the schema forgets shows as one
// of these refused.
func (g *boundGen) bounds(t *testing.T, what string, s *openapi3.Schema, body, unique bool) []any {
	t.Helper()
	var out []any
	if s.Type.Includes(openapi3.TypeNull) {
		out = append(out, nil)
	}
	if len(s.Enum) > 0 {
		return append(out, s.Enum...)
	}
	allowed := func(vs ...any) {
		for _, v := range vs {
			if visit(s, v) == nil {
				out = append(out, v)
			}
		}
	}
	switch {
	case s.Type.Includes(openapi3.TypeInteger):
		lo, hi := json.Number("-9007199254740991"), json.Number("9007199254740991") // ±(2^53-1): any JSON reader's integers
		switch s.Format {
		case "int64":
			lo, hi = json.Number(strconv.FormatInt(math.MinInt64, 10)), json.Number(strconv.FormatInt(math.MaxInt64, 10))
		case "int32":
			lo, hi = json.Number(strconv.FormatInt(math.MinInt32, 10)), json.Number(strconv.FormatInt(math.MaxInt32, 10))
		}
		if s.Min != nil {
			lo = exactInt(*s.Min)
		}
		if s.Max != nil {
			hi = exactInt(*s.Max)
		}
		out = append(out, lo, hi)
	case s.Type.Includes(openapi3.TypeBoolean):
		out = append(out, true, false)
	case s.Type.Includes(openapi3.TypeString):
		switch s.Format {
		case "date":
			out = append(out, "0001-01-01", "9999-12-31")
			allowed("0000-01-01")
		case "date-time":
			out = append(out, "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z")
			allowed("0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
				"2999-01-01T00:00:00.1234567Z", "2999-01-01t00:00:00z", "2999-01-01T00:00:60Z", "2999-01-01T00:00:00+16:00")
		default:
			out = append(out, g.text(t, what, s, int(s.MinLength)))
			if s.MaxLength != nil {
				out = append(out, g.text(t, what, s, int(*s.MaxLength)))
			} else {
				long := 2000 // a query's value; a body's is longer
				if body {
					long = 10000
				}
				allowed(g.text(t, what, s, long))
			}
			for _, hard := range []string{" ", "  ", "\t\n", "\x00", "a\x00b", "\u200b", "\u0301\u0301", "\u3164", "\U000e0001",
				`"a b"@example.com`, "a@[127.0.0.1]", "a@b"} {
				if !unique {
					allowed(hard)
				} else if !g.used[hard] && visit(s, hard) == nil {
					g.used[hard] = true // a header's value (an Idempotency-Key) is sent once
					out = append(out, hard)
				}
			}
		}
	case s.Type.Includes(openapi3.TypeArray):
		out = append(out, []any{})
		if s.MaxItems != nil {
			out = append(out, g.items(t, what, s, int(*s.MaxItems)))
		} else {
			allowed(g.items(t, what, s, 100))
		}
		if !s.UniqueItems {
			first := g.items(t, what, s, 1)
			allowed(append(first, first...))
		}
	case s.Type.Includes(openapi3.TypeObject):
		if len(s.Properties) == 0 {
			out = append(out, map[string]any{}, map[string]any{"from": "08:00", "to": "18:00"})
			allowed(map[string]any{"a": "\x00"}, map[string]any{"\x00": 1}, map[string]any{"a": map[string]any{"b": "\x00"}},
				map[string]any{"a": []any{"\x00"}})
		}
		// An object's properties are fields of their own (bodyFields).
	default:
		t.Fatalf("%s: no bounds for type %v", what, s.Type)
	}
	return out
}

// items is a list of n values of s's items, unique when s says so: every
// enum member when there are fewer.
func (g *boundGen) items(t *testing.T, what string, s *openapi3.Schema, n int) []any {
	it := s.Items.Value
	if len(it.Enum) > 0 {
		if !s.UniqueItems {
			return slices.Repeat([]any{it.Enum[0]}, n)
		}
		return slices.Clone(it.Enum)[:min(n, len(it.Enum))]
	}
	out := make([]any, n)
	for i := range out {
		out[i] = g.text(t, what, it, max(int(it.MinLength), 12))
	}
	return out
}

// text is a string of length runes that s allows and the test has not
// sent before: the base-62 digits of a number padded with "a", or an
// e-mail address of that length when the pattern wants one.
func (g *boundGen) text(t *testing.T, what string, s *openapi3.Schema, length int) string {
	t.Helper()
	if length == 0 && g.matches(s, "") {
		return ""
	}
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for k := 0; ; k++ {
		id := ""
		for r := k; ; r /= len(digits) {
			id = string(digits[r%len(digits)]) + id
			if r < len(digits) {
				break
			}
		}
		if len(id) > length {
			break
		}
		candidates := []string{strings.Repeat("a", length-len(id)) + id}
		if length >= 6+len(id) {
			candidates = append(candidates, emailOfLength(min(64, length-10), length, id))
		}
		for _, c := range candidates {
			if len([]rune(c)) == length && !g.used[c] && g.matches(s, c) {
				g.used[c] = true
				return c
			}
		}
	}
	t.Fatalf("%s: no string of %d characters matches %q (format %q): teach boundGen.text one", what, length, s.Pattern, s.Format)
	return ""
}

// emailOfLength is an address of exactly length characters: a local part
// of local characters ending in id, "@", labels of at most 63 letters
// ending in ".example".
func emailOfLength(local, length int, id string) string {
	l := strings.Repeat("a", max(local-len(id), 0)) + id
	domainLen := length - len(l) - 1
	if domainLen < len(".example")+1 {
		return ""
	}
	labels := domainLen - len(".example")
	var d []string
	for labels > 0 {
		k := min(labels, 63)
		if labels-k == 1 || (labels > 63 && labels-k < 2) {
			k = labels - 2 // never a label of 0 characters after a dot
		}
		d = append(d, strings.Repeat("b", k))
		labels -= k + 1
	}
	return l + "@" + strings.Join(d, ".") + ".example"
}

// exactInt is the integer f as a JSON number written in full (9223372036854774784,
// not 9.223372036854775e+18).
func exactInt(f float64) json.Number {
	return json.Number(strconv.FormatFloat(f, 'f', 0, 64))
}
