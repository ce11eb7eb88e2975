package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// write sends method path with a JSON body as token; headers are extra
// name/value pairs.
func (a *testAPI) write(method, path, body, token string, headers ...string) response {
	a.t.Helper()
	return a.send(method, path, token, body, headers...)
}

// tailspinIMEI is a device of tailspin, another tenant than acme (whose
// van, acmeVan, the writes name).
const tailspinIMEI = "865231041152302"

// configCase is one resource of the writes of docs/design.md §15: its
// path, a valid create body, a change, and the id field of its rows.
type configCase struct {
	path, create, change, id string
}

var configCases = []configCase{
	{"/api/v2/events", `{"type":"overspeed","name":"Van overspeed","active":true,"checked_value":"100","imei":["` + acmeVan + `"],` +
		`"week_days":["mon","fri"],"day_time":{"from":"22:00","to":"06:00"},"notify_email_address":"a@acme.example, b@acme.example"}`,
		`{"checked_value":"110","active":false}`, "event_id"},
	{"/api/v2/services", `{"imei":"` + acmeVan + `","name":"Tyres","odo":true,"odo_interval":40000,"odo_last":50000,"days_last":"2026-01-02"}`,
		`{"odo_interval":45000,"days_last":null}`, "service_id"},
	{"/api/v2/reports", `{"name":"Van stops","type":"drives_stops","format":"pdf","imei":["` + acmeVan + `"],"schedule_period":"w",` +
		`"dt_schedule_w":"2026-03-02T06:00:00+01:00","data_items":["route_start"]}`,
		`{"speed_limit":80,"dt_schedule_w":null}`, "report_id"},
}

// TestConfigWrites: each resource is created (201; a replay of its
// Idempotency-Key returns the same row), changed (200, the fields named
// only), deleted (204, then 404), each write audited once.
func TestConfigWrites(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	for _, c := range configCases {
		t.Run(c.path, func(t *testing.T) {
			res := a.write(http.MethodPost, c.path, c.create, tok, "Idempotency-Key", "k-"+c.id)
			if res.status != http.StatusCreated {
				t.Fatalf("create: %d %s", res.status, res.raw)
			}
			d := res.data(t)
			id := int64(d[c.id].(float64))
			again := a.write(http.MethodPost, c.path, c.create, tok, "Idempotency-Key", "k-"+c.id)
			if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || int64(again.data(t)[c.id].(float64)) != id {
				t.Fatalf("replay: %d %s", again.status, again.raw)
			}
			other := a.write(http.MethodPost, c.path, strings.Replace(c.create, `"name":"`, `"name":"x`, 1), tok, "Idempotency-Key", "k-"+c.id)
			if other.status != http.StatusConflict || other.errorCode(t) != "IDEMPOTENCY_KEY_REUSED" {
				t.Fatalf("reused key: %d %s", other.status, other.raw)
			}
			dup := a.write(http.MethodPost, c.path, c.create, tok)
			if dup.status != http.StatusConflict || dup.errorCode(t) != "CONFLICT" {
				t.Fatalf("duplicate name: %d %s", dup.status, dup.raw)
			}
			one := fmt.Sprintf("%s/%d", c.path, id)
			ch := a.write(http.MethodPatch, one, c.change, tok)
			if ch.status != http.StatusOK {
				t.Fatalf("change: %d %s", ch.status, ch.raw)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(c.change), &want); err != nil {
				t.Fatal(err)
			}
			got := ch.data(t)
			for k, v := range want {
				if fmt.Sprint(got[k]) != fmt.Sprint(v) {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if got["name"] != d["name"] {
				t.Errorf("name %v changed to %v", d["name"], got["name"])
			}
			if del := a.write(http.MethodDelete, one, "", tok); del.status != http.StatusNoContent {
				t.Fatalf("delete: %d %s", del.status, del.raw)
			}
			if gone := a.write(http.MethodPatch, one, c.change, tok); gone.status != http.StatusNotFound || gone.errorCode(t) != "NOT_FOUND" {
				t.Fatalf("change after delete: %d %s", gone.status, gone.raw)
			}
			if gone := a.write(http.MethodDelete, one, "", tok); gone.status != http.StatusNotFound {
				t.Fatalf("delete after delete: %d %s", gone.status, gone.raw)
			}
			action := strings.TrimSuffix(c.id, "_id")
			for _, verb := range []string{"create", "update", "delete"} {
				if n := a.count(t, "SELECT count(*) FROM audit_events WHERE action = ? AND target_id = ?", action+"."+verb, id); n != 1 {
					t.Errorf("%d audit events %s.%s", n, action, verb)
				}
			}
		})
	}
}

// TestConfigWritesRefused: every class of bad input and every caller that
// may not write is a 4xx in the envelope with a stable code, and writes
// nothing (no row, no audit event).
func TestConfigWritesRefused(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	counts := func() string {
		var s string
		if err := a.db.NewRaw(`SELECT concat_ws(',', (SELECT count(*) FROM events), (SELECT count(*) FROM services),
			(SELECT count(*) FROM reports), (SELECT count(*) FROM audit_events), (SELECT count(*) FROM idempotency_keys))`).Scan(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := counts()
	tailspinID, acmeNightID := a.accountID(t, "tailspin"), a.accountID(t, "acme-night")
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("%d", 100000000+i)
	}
	manyIMEIs, _ := json.Marshal(many)
	short := make([]string, 1001)
	for i := range short {
		short[i] = fmt.Sprint(i)
	}
	manyShort, _ := json.Marshal(short)
	ev := func(extra string) string {
		return `{"type":"overspeed","name":"R","checked_value":"90"` + extra + `}`
	}
	tests := []struct {
		name, token, method, path, body string
		status                          int
		code, field                     string
	}{
		{"unknown field", tok, "POST", "/api/v2/events", ev(`,"colour":"red"`), 400, "INVALID_BODY", ""},
		{"field case", tok, "POST", "/api/v2/events", ev(`,"Active":true`), 400, "INVALID_BODY", ""},
		{"repeated key", tok, "POST", "/api/v2/events", ev(`,"name":"S"`), 400, "INVALID_BODY", ""},
		{"wrong type", tok, "POST", "/api/v2/events", ev(`,"active":"yes"`), 400, "INVALID_BODY", ""},
		{"null not nullable", tok, "POST", "/api/v2/events", ev(`,"imei":null`), 400, "INVALID_BODY", ""},
		{"null day_time", tok, "POST", "/api/v2/events", ev(`,"day_time":null`), 400, "INVALID_BODY", ""},
		{"1e400", tok, "POST", "/api/v2/events", ev(`,"email_template_id":1e400`), 400, "INVALID_BODY", ""},
		{"NaN string", tok, "POST", "/api/v2/events", ev(`,"email_template_id":"NaN"`), 400, "INVALID_BODY", ""},
		{"id overflow", tok, "POST", "/api/v2/events", ev(`,"account_id":99999999999999999999`), 400, "INVALID_BODY", ""},
		{"negative template", tok, "POST", "/api/v2/events", ev(`,"sms_template_id":-1`), 400, "VALIDATION_FAILED", "sms_template_id"},
		{"unknown type", tok, "POST", "/api/v2/events", `{"type":"teleport","name":"R"}`, 400, "VALIDATION_FAILED", "type"},
		{"no type", tok, "POST", "/api/v2/events", `{"name":"R"}`, 400, "VALIDATION_FAILED", "type"},
		{"no name", tok, "POST", "/api/v2/events", `{"type":"sos"}`, 400, "VALIDATION_FAILED", "name"},
		{"blank name", tok, "POST", "/api/v2/events", `{"type":"sos","name":"   "}`, 400, "VALIDATION_FAILED", "name"},
		{"long name", tok, "POST", "/api/v2/events", `{"type":"sos","name":"` + strings.Repeat("n", 101) + `"}`, 400, "VALIDATION_FAILED", "name"},
		{"checked_value NaN", tok, "POST", "/api/v2/events", `{"type":"overspeed","name":"R","checked_value":"NaN"}`, 400, "VALIDATION_FAILED", "checked_value"},
		{"checked_value Infinity", tok, "POST", "/api/v2/events", `{"type":"overspeed","name":"R","checked_value":"Infinity"}`, 400, "VALIDATION_FAILED", "checked_value"},
		{"checked_value 1e400", tok, "POST", "/api/v2/events", `{"type":"stopped","name":"R","checked_value":"1e400"}`, 400, "VALIDATION_FAILED", "checked_value"},
		{"checked_value zero", tok, "POST", "/api/v2/events", `{"type":"overspeed","name":"R","checked_value":"0"}`, 400, "VALIDATION_FAILED", "checked_value"},
		{"param malformed", tok, "POST", "/api/v2/events", `{"type":"param","name":"R","checked_value":"temp1 >> 3"}`, 400, "VALIDATION_FAILED", "checked_value"},
		{"week day", tok, "POST", "/api/v2/events", ev(`,"week_days":["mon","funday"]`), 400, "VALIDATION_FAILED", "week_days"},
		{"week day twice", tok, "POST", "/api/v2/events", ev(`,"week_days":["mon","mon"]`), 400, "VALIDATION_FAILED", "week_days"},
		{"day_time half", tok, "POST", "/api/v2/events", ev(`,"day_time":{"from":"08:00"}`), 400, "VALIDATION_FAILED", "day_time"},
		{"day_time 24:00", tok, "POST", "/api/v2/events", ev(`,"day_time":{"from":"08:00","to":"24:00"}`), 400, "VALIDATION_FAILED", "day_time"},
		{"day_time key", tok, "POST", "/api/v2/events", ev(`,"day_time":{"from":"08:00","until":"09:00"}`), 400, "INVALID_BODY", ""},
		{"trigger", tok, "POST", "/api/v2/events", ev(`,"zone_trigger":"both"`), 400, "VALIDATION_FAILED", "zone_trigger"},
		{"gateway", tok, "POST", "/api/v2/events", ev(`,"cmd_gateway":"pigeon"`), 400, "VALIDATION_FAILED", "cmd_gateway"},
		{"hex command", tok, "POST", "/api/v2/events", ev(`,"cmd_type":"hex","cmd_string":"0xZZ"`), 400, "VALIDATION_FAILED", "cmd_string"},
		{"e-mail", tok, "POST", "/api/v2/events", ev(`,"notify_email_address":"not an address"`), 400, "VALIDATION_FAILED", "notify_email_address"},
		{"imei 10,000", tok, "POST", "/api/v2/events", ev(`,"imei":` + string(manyIMEIs)), 413, "PAYLOAD_TOO_LARGE", ""},
		{"imei 1,001", tok, "POST", "/api/v2/events", ev(`,"imei":` + string(manyShort)), 400, "VALIDATION_FAILED", "imei"},
		{"reports imei 1,001", tok, "POST", "/api/v2/reports", `{"name":"R","imei":` + string(manyShort) + `}`, 400, "VALIDATION_FAILED", "imei"},
		{"imei twice", tok, "POST", "/api/v2/events", ev(`,"imei":["` + acmeVan + `","` + acmeVan + `"]`), 400, "VALIDATION_FAILED", "imei"},
		{"imei malformed", tok, "POST", "/api/v2/events", ev(`,"imei":["a b"]`), 400, "VALIDATION_FAILED", "imei"},
		{"zones malformed", tok, "POST", "/api/v2/events", ev(`,"zones":[""]`), 400, "VALIDATION_FAILED", "zones"},
		{"NUL", tok, "POST", "/api/v2/events", ev(`,"cmd_string":"a\u0000b"`), 400, "VALIDATION_FAILED", "cmd_string"},
		{"not an object", tok, "POST", "/api/v2/events", `[]`, 400, "INVALID_BODY", ""},
		{"query parameter", tok, "POST", "/api/v2/events?x=1", ev(""), 400, "INVALID_PARAMETER", ""},
		{"account of another tenant", tok, "POST", "/api/v2/events", ev(fmt.Sprintf(`,"account_id":%d`, tailspinID)), 404, "NOT_FOUND", ""},
		{"account a subaccount", demoToken(t, "fleetco-all"), "POST", "/api/v2/reports", fmt.Sprintf(`{"name":"R","account_id":%d}`, acmeNightID), 400, "VALIDATION_FAILED", "account_id"},
		{"account zero", tok, "POST", "/api/v2/events", ev(`,"account_id":0`), 400, "VALIDATION_FAILED", "account_id"},
		{"subaccount", demoToken(t, "acme-night-all"), "POST", "/api/v2/reports", `{"name":"R"}`, 403, "PRIVILEGE_REQUIRED", ""},
		{"subaccount done", demoToken(t, "acme-night-all"), "POST", "/api/v2/services/1/done", `{}`, 403, "PRIVILEGE_REQUIRED", ""},
		{"read-only", demoToken(t, "umbrella-all"), "POST", "/api/v2/reports", `{"name":"R"}`, 403, "READ_ONLY_ACCOUNT", ""},
		{"token without the route", demoToken(t, "globex-read"), "POST", "/api/v2/events", ev(""), 403, "TOKEN_PERMISSION_DENIED", ""},
		{"service no imei", tok, "POST", "/api/v2/services", `{"name":"S"}`, 400, "VALIDATION_FAILED", "imei"},
		{"service interval range", tok, "POST", "/api/v2/services", `{"name":"S","imei":"` + acmeVan + `","odo_interval":2147483648}`, 400, "VALIDATION_FAILED", "odo_interval"},
		{"service negative", tok, "POST", "/api/v2/services", `{"name":"S","imei":"` + acmeVan + `","days_left_num":-1}`, 400, "VALIDATION_FAILED", "days_left_num"},
		{"service date", tok, "POST", "/api/v2/services", `{"name":"S","imei":"` + acmeVan + `","days_last":"2026-02-30"}`, 400, "VALIDATION_FAILED", "days_last"},
		{"service float", tok, "POST", "/api/v2/services", `{"name":"S","imei":"` + acmeVan + `","odo_last":1.5}`, 400, "INVALID_BODY", ""},
		{"report period", tok, "POST", "/api/v2/reports", `{"name":"R","schedule_period":"m"}`, 400, "VALIDATION_FAILED", "schedule_period"},
		{"report time", tok, "POST", "/api/v2/reports", `{"name":"R","dt_schedule_d":"tomorrow"}`, 400, "VALIDATION_FAILED", "dt_schedule_d"},
		{"report type long", tok, "POST", "/api/v2/reports", `{"name":"R","type":"` + strings.Repeat("t", 51) + `"}`, 400, "VALIDATION_FAILED", "type"},
		{"report sensors", tok, "POST", "/api/v2/reports", `{"name":"R","sensor_names":["a","a"]}`, 400, "VALIDATION_FAILED", "sensor_names"},
		{"patch empty", tok, "PATCH", "/api/v2/events/1", `{}`, 400, "VALIDATION_FAILED", "body"},
		{"patch account", tok, "PATCH", "/api/v2/events/1", `{"account_id":4}`, 400, "INVALID_BODY", ""},
		{"patch null", tok, "PATCH", "/api/v2/events/1", `{"name":null}`, 400, "INVALID_BODY", ""},
		{"patch bad value", tok, "PATCH", "/api/v2/events/1", `{"checked_value":"fast"}`, 400, "VALIDATION_FAILED", "checked_value"},
		{"patch id overflow", tok, "PATCH", "/api/v2/events/99999999999999999999", `{"name":"x"}`, 400, "INVALID_PARAMETER", ""},
		{"patch id zero", tok, "DELETE", "/api/v2/reports/0", ``, 400, "INVALID_PARAMETER", ""},
		{"done time", tok, "POST", "/api/v2/services/1/done", `{"time":"yesterday"}`, 400, "VALIDATION_FAILED", "time"},
		{"done future", tok, "POST", "/api/v2/services/1/done", `{"time":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`, 400, "VALIDATION_FAILED", "time"},
		{"done odometer", tok, "POST", "/api/v2/services/1/done", `{"odometer":-5}`, 400, "VALIDATION_FAILED", "odometer"},
		{"done unknown", tok, "POST", "/api/v2/services/1/done", `{"mileage":5}`, 400, "INVALID_BODY", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := a.write(tc.method, tc.path, tc.body, tc.token)
			if res.status != tc.status {
				t.Fatalf("status %d, want %d: %s", res.status, tc.status, res.raw)
			}
			if code := res.errorCode(t); code != tc.code {
				t.Fatalf("code %s, want %s: %s", code, tc.code, res.raw)
			}
			if tc.field != "" {
				e := res.body["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				fields, _ := details["fields"].(map[string]any)
				if _, ok := fields[tc.field]; !ok {
					t.Fatalf("no fields.%s: %s", tc.field, res.raw)
				}
			}
		})
	}
	if after := counts(); after != before {
		t.Fatalf("rows (events, services, reports, audit, keys) %s → %s", before, after)
	}

	// Another tenant's device and an unknown one, another tenant's row
	// and a missing id: the same answer, byte for byte but the request id.
	same := func(t *testing.T, x, y response) {
		t.Helper()
		strip := func(r response) string {
			delete(r.body["meta"].(map[string]any), "request_id")
			b, _ := json.Marshal(r.body)
			return fmt.Sprint(r.status, " ", string(b))
		}
		if sx, sy := strip(x), strip(y); sx != sy {
			t.Fatalf("answers differ:\n%s\n%s", sx, sy)
		}
	}
	t.Run("another tenant's IMEI", func(t *testing.T) {
		for _, p := range []string{"/api/v2/events", "/api/v2/reports"} {
			x := a.write(http.MethodPost, p, `{"type":"sos","name":"R","imei":["`+tailspinIMEI+`"]}`, tok)
			y := a.write(http.MethodPost, p, `{"type":"sos","name":"R","imei":["`+strings.Repeat("9", 15)+`"]}`, tok)
			if x.status != http.StatusBadRequest && p == "/api/v2/events" {
				t.Fatalf("%s: %d %s", p, x.status, x.raw)
			}
			if p == "/api/v2/events" {
				same(t, x, y)
			}
		}
		x := a.write(http.MethodPost, "/api/v2/services", `{"name":"S","imei":"`+tailspinIMEI+`"}`, tok)
		y := a.write(http.MethodPost, "/api/v2/services", `{"name":"S","imei":"`+strings.Repeat("9", 15)+`"}`, tok)
		if x.status != http.StatusBadRequest {
			t.Fatalf("services: %d %s", x.status, x.raw)
		}
		same(t, x, y)
	})
	t.Run("another tenant's row", func(t *testing.T) {
		ids := make([]int64, 3)
		if err := a.db.NewRaw(`SELECT (SELECT min(event_id) FROM events e JOIN accounts a ON a.id = e.account_id WHERE a.username = 'tailspin'),
			(SELECT min(service_id) FROM services s JOIN accounts a ON a.id = s.account_id WHERE a.username = 'tailspin'),
			(SELECT min(report_id) FROM reports r JOIN accounts a ON a.id = r.account_id WHERE a.username = 'tailspin')`).Scan(context.Background(), &ids[0], &ids[1], &ids[2]); err != nil {
			t.Fatal(err)
		}
		for i, p := range []string{"/api/v2/events/%d", "/api/v2/services/%d", "/api/v2/reports/%d"} {
			if ids[i] == 0 {
				t.Fatalf("tailspin has no row for %s", p)
			}
			same(t, a.write(http.MethodPatch, fmt.Sprintf(p, ids[i]), `{"name":"Mine now"}`, tok),
				a.write(http.MethodPatch, fmt.Sprintf(p, 987654321), `{"name":"Mine now"}`, tok))
			same(t, a.write(http.MethodDelete, fmt.Sprintf(p, ids[i]), "", tok), a.write(http.MethodDelete, fmt.Sprintf(p, 987654321), "", tok))
		}
		same(t, a.write(http.MethodPost, fmt.Sprintf("/api/v2/services/%d/done", ids[1]), `{}`, tok),
			a.write(http.MethodPost, "/api/v2/services/987654321/done", `{}`, tok))
	})
	if after := counts(); after != before {
		t.Fatalf("rows (events, services, reports, audit, keys) %s → %s", before, after)
	}
}

// TestEventQuota: the events quota holds under concurrent creates.
func TestEventQuota(t *testing.T) {
	a := newTestAPI(t)
	a.exec(t, "UPDATE accounts SET quota_events = (SELECT count(*) FROM events e WHERE e.account_id = accounts.id) + 3 WHERE username = 'acme'")
	tok := demoToken(t, "acme-all")
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = a.write(http.MethodPost, "/api/v2/events", fmt.Sprintf(`{"type":"sos","name":"Q%d"}`, i), tok).status
		}()
	}
	wg.Wait()
	created, refused := 0, 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusForbidden:
			refused++
		default:
			t.Fatalf("status %d", s)
		}
	}
	if created != 3 || refused != 5 {
		t.Fatalf("%d created, %d refused: %v", created, refused, statuses)
	}
	res := a.write(http.MethodPost, "/api/v2/events", `{"type":"sos","name":"Q9"}`, tok)
	if res.status != http.StatusForbidden || res.errorCode(t) != "QUOTA_EXCEEDED" {
		t.Fatalf("%d %s", res.status, res.raw)
	}
	acct := a.get(fmt.Sprintf("/api/v2/accounts/%d", a.accountID(t, "acme")), tok)
	if acct.status != http.StatusOK {
		t.Fatalf("GET /accounts: %d %s", acct.status, acct.raw)
	}
	q := acct.data(t)["quotas"].(map[string]any)
	if q["events"] == nil {
		t.Fatalf("quotas without events: %v", q)
	}
}

// notificationsOf counts the notifications of the rule id.
func (a *testAPI) notificationsOf(t *testing.T, column string, id int64) int {
	t.Helper()
	return a.count(t, "SELECT count(*) FROM notifications WHERE "+column+" = ?", id)
}

// TestEventRuleWritesTakeEffect: a rule created through one server fires
// on the next reading posted to another (no server keeps rules: each
// batch reads them); a change of its checked_value starts it afresh; a
// deactivated or deleted rule fires no more.
func TestEventRuleWritesTakeEffect(t *testing.T) {
	base := newTestAPI(t)
	srvA, poolA := pairServer(t, base, "writes-a")
	srvB, poolB := pairServer(t, base, "writes-b")
	t.Cleanup(func() { poolA.Close(); poolB.Close() })
	tok := demoToken(t, "acme-all")
	res := srvA.write(http.MethodPost, "/api/v2/events", `{"type":"overspeed","name":"Van fast","active":true,"checked_value":"90","imei":["`+acmeVan+`"]}`, tok)
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.raw)
	}
	id := int64(res.data(t)["event_id"].(float64))
	step := 0
	read := func(speed float64) {
		t.Helper()
		step++
		r := srvB.postReadings(tok, batch(map[string]any{"imei": acmeVan, "time": at(time.Duration(step-100) * time.Second), "speed": speed}))
		if got := r.ingest(t); got.Accepted != 1 {
			t.Fatalf("reading: %+v", got)
		}
	}
	read(100)
	if n := base.notificationsOf(t, "event_id", id); n != 1 {
		t.Fatalf("%d notifications after the first overspeed, want 1", n)
	}
	// 110 is still over 90: the rule has fired and not re-armed.
	read(110)
	// A new threshold starts the rule afresh: 130 > 120 fires at once,
	// though the old condition never ended.
	if r := srvA.write(http.MethodPatch, fmt.Sprintf("/api/v2/events/%d", id), `{"checked_value":"120"}`, tok); r.status != http.StatusOK {
		t.Fatalf("patch: %d %s", r.status, r.raw)
	}
	read(130)
	if n := base.notificationsOf(t, "event_id", id); n != 2 {
		t.Fatalf("%d notifications after the new threshold, want 2", n)
	}
	if r := srvA.write(http.MethodPatch, fmt.Sprintf("/api/v2/events/%d", id), `{"active":false}`, tok); r.status != http.StatusOK {
		t.Fatalf("deactivate: %d %s", r.status, r.raw)
	}
	read(0)
	read(150)
	if r := srvA.write(http.MethodPatch, fmt.Sprintf("/api/v2/events/%d", id), `{"active":true}`, tok); r.status != http.StatusOK {
		t.Fatalf("activate: %d %s", r.status, r.raw)
	}
	read(0)
	read(150)
	if n := base.notificationsOf(t, "event_id", id); n != 3 {
		t.Fatalf("%d notifications after deactivating and activating, want 3", n)
	}
	if r := srvA.write(http.MethodDelete, fmt.Sprintf("/api/v2/events/%d", id), "", tok); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	read(0)
	read(160)
	if n := base.notificationsOf(t, "event_id", id); n != 3 {
		t.Fatalf("%d notifications after the delete, want 3", n)
	}
}

// TestServiceWritesMoveState: a record created expired notifies at once;
// the work done moves it out of expired (its state re-armed); a change
// that makes it expired again notifies again.
func TestServiceWritesMoveState(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	// The van's odometer is 58210 km: 10000 km since 40000 with an interval
	// of 15000 is expired.
	res := a.write(http.MethodPost, "/api/v2/services", `{"imei":"`+acmeVan+`","name":"Brakes","odo":true,"odo_interval":15000,"odo_last":40000,"notify_service_expire":true}`, tok)
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.raw)
	}
	id := int64(res.data(t)["service_id"].(float64))
	if n := a.notificationsOf(t, "service_id", id); n != 1 {
		t.Fatalf("%d notifications of a record created expired, want 1", n)
	}
	done := a.write(http.MethodPost, fmt.Sprintf("/api/v2/services/%d/done", id), `{}`, tok)
	if done.status != http.StatusOK {
		t.Fatalf("done: %d %s", done.status, done.raw)
	}
	d := done.data(t)
	if d["odo_last"] != 58210.0 || d["days_last"] != time.Now().UTC().Format("2006-01-02") {
		t.Fatalf("done: odo_last %v, days_last %v", d["odo_last"], d["days_last"])
	}
	if n := a.count(t, "SELECT count(*) FROM service_states WHERE service_id = ? AND state = ''", id); n != 1 {
		t.Fatalf("state after done: %d rows ''", n)
	}
	if r := a.write(http.MethodPatch, fmt.Sprintf("/api/v2/services/%d", id), `{"odo_last":1000}`, tok); r.status != http.StatusOK {
		t.Fatalf("patch: %d %s", r.status, r.raw)
	}
	if n := a.notificationsOf(t, "service_id", id); n != 2 {
		t.Fatalf("%d notifications after expiring again, want 2", n)
	}
	if r := a.write(http.MethodPost, fmt.Sprintf("/api/v2/services/%d/done", id), `{"odometer":58000,"engine_hours":1700,"time":"2026-01-10T10:00:00Z"}`, tok); r.status != http.StatusOK ||
		r.data(t)["odo_last"] != 58000.0 || r.data(t)["engh_last"] != 1700.0 || r.data(t)["days_last"] != "2026-01-10" {
		t.Fatalf("done with values: %d %s", r.status, r.raw)
	}
	if n := a.count(t, "SELECT count(*) FROM audit_events WHERE action = 'service.done' AND target_id = ?", id); n != 2 {
		t.Fatalf("%d service.done audit events, want 2", n)
	}
}

// TestConfigWritesDeniedEveryRoute: the route decisions of the writes of
// docs/design.md §15 through the real stack, every one of the ten routes:
// a subaccount writes none of them whatever its privileges
// (not_for_subaccounts: 403 PRIVILEGE_REQUIRED naming the account type), a
// read-only account none (403 READ_ONLY_ACCOUNT), and neither writes a row
// or an audit event.
func TestConfigWritesDeniedEveryRoute(t *testing.T) {
	a := newTestAPI(t)
	counts := func() string {
		var s string
		if err := a.db.NewRaw(`SELECT concat_ws(',', (SELECT count(*) FROM events), (SELECT count(*) FROM services),
			(SELECT count(*) FROM reports), (SELECT count(*) FROM audit_events))`).Scan(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := counts()
	bodies := map[string]string{"POST /events": `{"type":"sos","name":"Denied"}`, "PATCH /events/{id}": `{"active":false}`,
		"DELETE /events/{id}": ``, "POST /services": `{"imei":"` + acmeVan + `","name":"Denied"}`, "PATCH /services/{id}": `{"odo":false}`,
		"DELETE /services/{id}": ``, "POST /services/{id}/done": `{}`, "POST /reports": `{"name":"Denied"}`,
		"PATCH /reports/{id}": `{"speed_limit":1}`, "DELETE /reports/{id}": ``}
	for route, body := range bodies {
		method, tmpl, _ := strings.Cut(route, " ")
		path := "/api/v2" + strings.ReplaceAll(tmpl, "{id}", "1")
		sub := a.write(method, path, body, demoToken(t, "acme-night-all"))
		if sub.status != http.StatusForbidden || sub.errorCode(t) != "PRIVILEGE_REQUIRED" ||
			fmt.Sprint(sub.body["error"].(map[string]any)["details"]) != "map[account_type:subaccount]" {
			t.Errorf("%s as a subaccount: %d %s", route, sub.status, sub.raw)
		}
		ro := a.write(method, path, body, demoToken(t, "umbrella-all"))
		if ro.status != http.StatusForbidden || ro.errorCode(t) != "READ_ONLY_ACCOUNT" {
			t.Errorf("%s as a read-only account: %d %s", route, ro.status, ro.raw)
		}
	}
	if after := counts(); after != before {
		t.Fatalf("rows (events, services, reports, audit) %s → %s", before, after)
	}
}
