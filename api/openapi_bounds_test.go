package api_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/fleetapi/fleetapi/webhook"
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
				"account_expire_dt": "2099-12-31", "privileges": []any{"reports"}, "rate_limit": 60, "timezone": "Europe/Lisbon"}
		}},
		"PATCH /accounts/{id}": {func(int) map[string]any {
			return map[string]any{"email": "night@acme.example", "active": true, "read_only": false, "account_expire": false,
				"account_expire_dt": "2099-12-31", "privileges": []any{"reports"}, "rate_limit": 60, "quotas": map[string]any{"tokens": 5},
				"timezone": "Asia/Tokyo"}
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
		"POST /readings": {func(n int) map[string]any {
			return map[string]any{"readings": []any{map[string]any{"imei": "356938035643809",
				"time": time.Now().UTC().Add(-time.Duration(n+1) * time.Second).Format(time.RFC3339Nano)}}}
		}},
		"POST /tokens": {func(n int) map[string]any {
			return map[string]any{"name": fmt.Sprintf("bound-%d", n), "permissions": []any{"GET /me"}, "account_id": acme,
				"expires_at": "2099-01-01T00:00:00Z", "rate_limit": 10}
		}},
		"POST /webhooks": {func(n int) map[string]any {
			return map[string]any{"url": fmt.Sprintf("https://hooks.acme.example/bound-%d", n), "description": "d",
				"types": []any{"overspeed"}, "active": true}
		}},
		// On a webhook created here, with a secret (body active=true); the
		// base leaves active false: a path id at a bound may name a demo
		// webhook, imported without a secret, which cannot be activated
		// (409).
		"PATCH /webhooks/{id}": {func(n int) map[string]any {
			return map[string]any{"url": fmt.Sprintf("https://hooks.acme.example/bound-patch-%d", n), "description": "d",
				"types": []any{"sos"}, "active": false}
		}},
		// a circle (on acme's demo circle for the PATCH); a value the
		// circle rules out (kind polygon) is set in the polygon of
		// otherBases
		"POST /zones":       {zoneCircleBody},
		"PATCH /zones/{id}": {zoneCircleBody},
		// The writes of docs/design.md §15: the admin names acme, the
		// rows changed are acme's demo rows.
		"POST /events": {func(n int) map[string]any {
			return eventBody(fmt.Sprintf("bound-%d", n), map[string]any{"account_id": acme})
		}},
		"PATCH /events/{id}": {func(n int) map[string]any { return eventBody(fmt.Sprintf("bound-patch-%d", n), nil) }},
		"POST /services": {func(n int) map[string]any {
			return serviceBody(fmt.Sprintf("bound-%d", n), map[string]any{"account_id": acme})
		}},
		"PATCH /services/{id}": {func(n int) map[string]any { return serviceBody(fmt.Sprintf("bound-patch-%d", n), nil) }},
		"POST /services/{id}/done": {func(int) map[string]any {
			return map[string]any{"time": "2026-01-02T03:04:05Z", "odometer": 1000, "engine_hours": 10}
		}},
		"POST /reports": {func(n int) map[string]any {
			return reportBody(fmt.Sprintf("bound-%d", n), map[string]any{"account_id": acme})
		}},
		"PATCH /reports/{id}": {func(n int) map[string]any { return reportBody(fmt.Sprintf("bound-patch-%d", n), nil) }},
	}
	// otherBases are the bodies a value is set in when the base rules it
	// out (an if/then of the document) before the required fields alone.
	otherBases := map[string][]func(n int) map[string]any{"POST /zones": {zonePolygonBody}, "PATCH /zones/{id}": {zonePolygonBody}}
	var notification int64 // a demo notification: the example id names none once ids moved on
	if err := a.db.NewRaw("SELECT min(id) FROM notifications").Scan(context.Background(), &notification); err != nil {
		t.Fatal(err)
	}
	// A webhook of acme's with a secret, and a delivery of it (POST
	// /webhooks/{id}/test): the example ids name none.
	acmeToken := demoToken(t, "acme-all")
	webhookID := idOf(t, a.createWebhook(t, acmeToken, `{"url":"https://hooks.acme.example/bound"}`))
	queued := a.send("POST", fmt.Sprintf("%s/%d/test", webhooksPath, webhookID), acmeToken, "")
	if queued.status != http.StatusAccepted {
		t.Fatalf("POST /webhooks/%d/test: %d %s", webhookID, queued.status, queued.raw)
	}
	deliveryID := idOf(t, queued.data(t))
	// A zone of acme's that no rule names, to delete (the demo's Depot is
	// named by a rule: 409).
	zoneID := idOf(t, a.send("POST", "/api/v2/zones", acmeToken, `{"name":"bound","kind":"circle","center":{"lat":1,"lon":2},"radius_m":10}`).data(t))
	// pathValues are the path values of an operation ("op") or of one of
	// its parameters ("op parameter"), where the example names no row.
	pathValues := map[string]int64{"PATCH /accounts/{id}": night, "PUT /accounts/{id}/objects": night, "GET /accounts/{id}/objects": night,
		"GET /notifications/{id}": notification, "PATCH /webhooks/{id}": webhookID,
		"PATCH /zones/{id}": a.demoZoneID(t, "acme", "circle"), "GET /zones/{id}": a.demoZoneID(t, "acme", "polygon"),
		"DELETE /zones/{id}": zoneID,
		"POST /webhooks/{id}/deliveries/{delivery_id}/retry id":          webhookID,
		"POST /webhooks/{id}/deliveries/{delivery_id}/retry delivery_id": deliveryID}
	for _, r := range []struct{ table, id, path string }{{"events", "event_id", "/events/{id}"}, {"services", "service_id", "/services/{id}"},
		{"reports", "report_id", "/reports/{id}"}} {
		id := a.demoRowID(t, r.table, r.id, "acme")
		pathValues["PATCH "+r.path], pathValues["DELETE "+r.path] = id, id
	}
	pathValues["POST /services/{id}/done"] = pathValues["PATCH /services/{id}"]

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
			if ok := op.Responses.Status(http.StatusOK); ok != nil && ok.Value.Content.Get("text/event-stream") != nil {
				// A stream stays open under the recorder: its one parameter,
				// the header Last-Event-ID, is sent over a real connection
				// by TestNotificationStreamResume and its bounds by
				// TestNotificationStreamLastEventIDBounds.
				continue
			}
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
					if id, ok := pathValues[name+" "+p.Name]; ok {
						v = strconv.FormatInt(id, 10)
					} else if id, ok := pathValues[name]; ok {
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
					for _, other := range otherBases[name] {
						if visit(bodySchema, c.body) == nil {
							break
						}
						// Another field of the base rules the value out (an
						// if/then of the document): another base.
						c.body = other(n)
						set(c.body)
					}
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
	// So are the devices of the writes of docs/design.md §15 (acme's rows).
	for _, c := range cases {
		switch c.op {
		case "PUT /accounts/{id}/objects", "POST /events", "PATCH /events/{id}", "POST /reports", "PATCH /reports/{id}":
			list, _ := c.body["imei"].([]any)
			for _, imei := range list {
				a.exec(t, "INSERT INTO objects (imei, account_id, name) VALUES (?, ?, '') ON CONFLICT DO NOTHING", imei, acme)
			}
		case "POST /services", "PATCH /services/{id}":
			if imei, ok := c.body["imei"].(string); ok {
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
	case c.field == "timezone" && c.value != nil && !storage.ValidTimezone(fmt.Sprint(c.value)):
		// Of the shape of a zone name, but none of the time zone database.
		return boundException{http.StatusBadRequest, "VALIDATION_FAILED", func(d map[string]any) bool {
			f, _ := d["fields"].(map[string]any)
			return len(f) == 1 && f["timezone"] != nil
		}}, true
	case c.field == "after" && c.op != "GET /objects/{id}/positions": // there: a time (keyset by time)
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
	case (c.op == "POST /webhooks" || c.op == "PATCH /webhooks/{id}") && c.field == "url" && c.value != nil &&
		webhook.NewClient(webhook.Config{}).CheckURL(fmt.Sprint(c.value)) != nil:
		// Of the schema's length, but not an https URL to a public host
		// (docs/design.md §14): the server judges the URL itself.
		return boundException{http.StatusBadRequest, "VALIDATION_FAILED", func(d map[string]any) bool {
			f, _ := d["fields"].(map[string]any)
			return len(f) == 1 && f["url"] != nil
		}}, true
	case writesJudged[c.op] && writeJudgedField(c.field) != "":
		// The writes of docs/design.md §15: what depends on another field,
		// the row or the data (docs/decisions.md, "The schema states what
		// it can of the writes"): a blank or invisible name, or one another
		// case took (409); an e-mail list; a window with one end; a hex
		// command under cmd_type hex; a checked_value of the base under
		// another type; the base's devices under another account; a time
		// out of years 1 to 9999 in UTC or ahead of the clock; zone ids
		// that are not zones of the row's account. Each names the field
		// judged, and only it.
		field := writeJudgedField(c.field)
		return boundException{http.StatusBadRequest, "VALIDATION_FAILED", func(d map[string]any) bool {
			f, _ := d["fields"].(map[string]any)
			return len(f) == 1 && f[field] != nil || c.op == "POST /services/{id}/done" && field == "time"
		}}, true
	case (c.op == "POST /zones" || c.op == "PATCH /zones/{id}") && c.field == "name" && c.value != nil &&
		strings.TrimSpace(fmt.Sprint(c.value)) == "":
		// A blank zone name (storage.CheckZone: white space only), stated
		// in the description alone, as the writes' blank names are.
		return boundException{http.StatusBadRequest, "VALIDATION_FAILED", func(d map[string]any) bool {
			f, _ := d["fields"].(map[string]any)
			return len(f) == 1 && f["name"] != nil
		}}, true
	case c.op == "POST /accounts" && c.field == "type" && c.value != "subaccount":
		// The levels below the caller (a user: subaccounts) and nobody
		// creates an admin: the management policy, on the caller's type.
		return boundException{http.StatusForbidden, "MANAGEMENT_DENIED", func(d map[string]any) bool { return d["reason"] == "not_below_caller" }}, true
	}
	return boundException{}, false
}

// writesJudged are the operations of the writes of docs/design.md §15.
var writesJudged = map[string]bool{"POST /events": true, "PATCH /events/{id}": true, "POST /services": true, "PATCH /services/{id}": true,
	"POST /services/{id}/done": true, "POST /reports": true, "PATCH /reports/{id}": true}

// writeJudgedField is the field a write of docs/design.md §15 names when
// it refuses a schema-valid value of body field f ("": none may be
// refused).
func writeJudgedField(f string) string {
	switch f {
	case "name", "notify_email_address", "schedule_email_address", "dt_schedule_d", "dt_schedule_w", "days_last", "time":
		return f
	case "day_time.from", "day_time.to":
		return "day_time"
	case "cmd_type":
		return "cmd_string"
	case "type":
		return "checked_value"
	case "account_id":
		return "imei"
	case "zones", "zones[]", "zone_ids", "zone_ids[]":
		// an id of the shape, but not a zone of the row's account
		return strings.TrimSuffix(f, "[]")
	}
	return ""
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
		if writesJudged[c.op] {
			switch {
			case res.status >= 200 && res.status < 300:
				return nil // the value passed the rule the schema cannot state
			case c.field == "name" && res.status == http.StatusConflict && code == "CONFLICT" && details["field"] == "name":
				return nil // another case took the name
			case c.ref && (res.status == http.StatusNotFound && code == "NOT_FOUND" || res.status == http.StatusForbidden && code == "MANAGEMENT_DENIED"):
				return nil // account_id: no account, or one outside the scope
			}
		}
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
		case res.status == http.StatusConflict && code == "CONFLICT" && c.op == "DELETE /zones/{id}" && c.field == "id":
			return nil // a zone that event rules name (the demo's Depot)
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
