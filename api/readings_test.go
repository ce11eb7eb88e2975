package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// truck7 is acme's Truck 7, the device most reading tests report for.
const truck7 = "356938035643809"

// postReadings sends POST /readings with body as token.
func (a *testAPI) postReadings(token, body string) response {
	a.t.Helper()
	return a.do(http.MethodPost, "/api/v2/readings", strings.NewReader(body),
		"Authorization", "Bearer "+token, "Content-Type", "application/json")
}

// imeiOf is the imei of the demo device named name.
func (a *testAPI) imeiOf(t *testing.T, name string) string {
	t.Helper()
	var imei string
	if err := a.db.NewRaw("SELECT imei FROM objects WHERE name = ?", name).Scan(context.Background(), &imei); err != nil {
		t.Fatalf("device %s: %v", name, err)
	}
	return imei
}

// batch is the body of POST /readings with items.
func batch(items ...map[string]any) string {
	b, err := json.Marshal(map[string]any{"readings": items})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// at is an RFC 3339 time d from now.
func at(d time.Duration) string { return time.Now().UTC().Add(d).Format(time.RFC3339Nano) }

// atS is at to the second (the positions' parameters take at most six
// fractional digits).
func atS(d time.Duration) string { return time.Now().UTC().Add(d).Format(time.RFC3339) }

// ingestResult is the data of a 200 of POST /readings.
type ingestResult struct {
	Accepted   int `json:"accepted"`
	Duplicates int `json:"duplicates"`
	Rejected   []struct {
		Index   int    `json:"index"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"rejected"`
}

func (r response) ingest(t *testing.T) ingestResult {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("POST /readings: status %d: %s", r.status, r.raw)
	}
	var env struct {
		Data ingestResult `json:"data"`
	}
	if err := json.Unmarshal(r.raw, &env); err != nil {
		t.Fatal(err)
	}
	return env.Data
}

// device is GET /objects?imei= of one device as token sees it.
func (a *testAPI) device(t *testing.T, token, imei string) map[string]any {
	t.Helper()
	items, _ := a.list(t, "/api/v2/objects?imei="+imei, token)
	if len(items) != 1 {
		t.Fatalf("device %s: %d items", imei, len(items))
	}
	return items[0]
}

// TestReadingsStoreAndState: accepted readings are stored, the newest
// moves the device's state (GET /objects), a retried batch is all
// duplicates, an older reading is history only, and the history reads
// back in time order (GET /objects/{id}/positions).
func TestReadingsStoreAndState(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	before := a.device(t, tok, truck7)
	for _, f := range []string{"last_time", "lat", "lon", "speed", "heading", "altitude", "ignition", "attributes"} {
		if v, ok := before[f]; !ok || v != nil {
			t.Fatalf("never reported: %s = %v (present %t), want null", f, v, ok)
		}
	}
	t1, t2 := at(-10*time.Minute), at(-5*time.Minute)
	body := batch(
		map[string]any{"imei": truck7, "time": t1, "lat": 38.7, "lon": -9.1, "speed": 40, "odometer": 120400.9, "attributes": map[string]any{"door": true}},
		map[string]any{"imei": truck7, "time": t2, "speed": 55.5, "heading": 90, "ignition": true, "engine_hours": 3401.7, "attributes": map[string]any{"fuel": 61.5}},
	)
	got := a.postReadings(tok, body).ingest(t)
	if got.Accepted != 2 || got.Duplicates != 0 || len(got.Rejected) != 0 {
		t.Fatalf("first batch: %+v", got)
	}
	d := a.device(t, tok, truck7)
	want := map[string]any{"speed": 55.5, "heading": float64(90), "ignition": true, "lat": 38.7, "lon": -9.1,
		"odometer": float64(120400), "engine_hours": float64(3401)}
	for f, v := range want {
		if d[f] != v {
			t.Errorf("state %s = %v, want %v", f, d[f], v)
		}
	}
	if attrs, _ := d["attributes"].(map[string]any); attrs["door"] != true || attrs["fuel"] != 61.5 {
		t.Errorf("attributes %v, want door and fuel merged", d["attributes"])
	}
	lastTime, _ := d["last_time"].(string)
	if p, err := time.Parse(time.RFC3339Nano, lastTime); err != nil || !p.Equal(mustTime(t, t2).Round(time.Microsecond)) {
		t.Errorf("last_time %v, want %s", d["last_time"], t2)
	}
	// The same batch again: nothing stored twice.
	if again := a.postReadings(tok, body).ingest(t); again.Accepted != 0 || again.Duplicates != 2 {
		t.Fatalf("retried batch: %+v, want 2 duplicates", again)
	}
	// An older reading: stored, the state unchanged.
	old := a.postReadings(tok, batch(map[string]any{"imei": truck7, "time": at(-20 * time.Minute), "speed": 5, "odometer": 999999})).ingest(t)
	if old.Accepted != 1 {
		t.Fatalf("older reading: %+v", old)
	}
	if after := a.device(t, tok, truck7); after["speed"] != 55.5 || after["odometer"] != float64(120400) || after["last_time"] != d["last_time"] {
		t.Errorf("an older reading moved the state: %v", after)
	}
	if n := a.count(t, "SELECT count(*) FROM positions WHERE imei = ?", truck7); n != 3 {
		t.Errorf("%d positions, want 3", n)
	}
	// The history, time ascending, paged by after.
	id := int64(d["id"].(float64))
	res := a.get(fmt.Sprintf("/api/v2/objects/%d/positions?per_page=2&from=%s", id, atS(-time.Hour)), tok)
	if res.status != http.StatusOK {
		t.Fatalf("positions: %d %s", res.status, res.raw)
	}
	page := res.body["data"].([]any)
	if len(page) != 2 || page[1].(map[string]any)["time"].(string) <= page[0].(map[string]any)["time"].(string) {
		t.Fatalf("first page %v", page)
	}
	last := page[1].(map[string]any)["time"].(string)
	res = a.get(fmt.Sprintf("/api/v2/objects/%d/positions?per_page=2&from=%s&after=%s", id, atS(-time.Hour), last), tok)
	if rest := res.body["data"].([]any); len(rest) != 1 || rest[0].(map[string]any)["speed"] != 55.5 {
		t.Fatalf("second page %v", rest)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadingsItemRejections: every field malformed, out of range, of the
// wrong type or missing is that item's INVALID_READING naming the field
// (or READING_IN_FUTURE, READING_TOO_OLD), never a 400 of the batch; the
// good item beside them is stored.
func TestReadingsItemRejections(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	now := at(-time.Minute)
	item := func(patch map[string]any, drop ...string) map[string]any {
		m := map[string]any{"imei": truck7, "time": now}
		for k, v := range patch {
			m[k] = v
		}
		for _, k := range drop {
			delete(m, k)
		}
		return m
	}
	many := map[string]any{}
	for i := range 33 {
		many[fmt.Sprintf("a%d", i)] = i
	}
	cases := []struct {
		name  string
		item  map[string]any
		code  string
		field string
	}{
		{"imei missing", item(nil, "imei"), "INVALID_READING", "imei"},
		{"imei null", item(map[string]any{"imei": nil}), "INVALID_READING", "imei"},
		{"imei number", item(map[string]any{"imei": 356938035643809}), "INVALID_READING", "imei"},
		{"imei empty", item(map[string]any{"imei": ""}), "INVALID_READING", "imei"},
		{"imei 51", item(map[string]any{"imei": strings.Repeat("1", 51)}), "INVALID_READING", "imei"},
		{"time missing", item(nil, "time"), "INVALID_READING", "time"},
		{"time number", item(map[string]any{"time": 1700000000}), "INVALID_READING", "time"},
		{"time not RFC 3339", item(map[string]any{"time": "2027-03-01 08:00"}), "INVALID_READING", "time"},
		{"time without offset", item(map[string]any{"time": "2027-03-01T08:00:00"}), "INVALID_READING", "time"},
		{"lat alone", item(map[string]any{"lat": 10}), "INVALID_READING", "lon"},
		{"lon alone", item(map[string]any{"lon": 10}), "INVALID_READING", "lat"},
		{"lat 91", item(map[string]any{"lat": 91, "lon": 0}), "INVALID_READING", "lat"},
		{"lat -90.5", item(map[string]any{"lat": -90.5, "lon": 0}), "INVALID_READING", "lat"},
		{"lon 181", item(map[string]any{"lat": 0, "lon": 181}), "INVALID_READING", "lon"},
		{"lat string", item(map[string]any{"lat": "1", "lon": 0}), "INVALID_READING", "lat"},
		{"speed fast", item(map[string]any{"speed": "fast"}), "INVALID_READING", "speed"},
		{"speed -1", item(map[string]any{"speed": -1}), "INVALID_READING", "speed"},
		{"speed 501", item(map[string]any{"speed": 501}), "INVALID_READING", "speed"},
		{"heading 361", item(map[string]any{"heading": 361}), "INVALID_READING", "heading"},
		{"heading -1", item(map[string]any{"heading": -1}), "INVALID_READING", "heading"},
		{"heading bool", item(map[string]any{"heading": true}), "INVALID_READING", "heading"},
		{"altitude string", item(map[string]any{"altitude": "high"}), "INVALID_READING", "altitude"},
		{"odometer -1", item(map[string]any{"odometer": -1}), "INVALID_READING", "odometer"},
		{"odometer 1e300", item(map[string]any{"odometer": 1e300}), "INVALID_READING", "odometer"},
		{"odometer array", item(map[string]any{"odometer": []int{1}}), "INVALID_READING", "odometer"},
		{"engine_hours -0.5", item(map[string]any{"engine_hours": -0.5}), "INVALID_READING", "engine_hours"},
		{"engine_hours object", item(map[string]any{"engine_hours": map[string]any{}}), "INVALID_READING", "engine_hours"},
		{"ignition string", item(map[string]any{"ignition": "on"}), "INVALID_READING", "ignition"},
		{"ignition 1", item(map[string]any{"ignition": 1}), "INVALID_READING", "ignition"},
		{"attributes array", item(map[string]any{"attributes": []int{}}), "INVALID_READING", "attributes"},
		{"attributes string", item(map[string]any{"attributes": "x"}), "INVALID_READING", "attributes"},
		{"33 attributes", item(map[string]any{"attributes": many}), "INVALID_READING", "attributes"},
		{"attribute name 65", item(map[string]any{"attributes": map[string]any{strings.Repeat("n", 65): 1}}), "INVALID_READING", "attributes"},
		{"attribute nested", item(map[string]any{"attributes": map[string]any{"door": map[string]any{"open": true}}}), "INVALID_READING", "attributes.door"},
		{"attribute array", item(map[string]any{"attributes": map[string]any{"temps": []int{1, 2}}}), "INVALID_READING", "attributes.temps"},
		{"attribute null", item(map[string]any{"attributes": map[string]any{"door": nil}}), "INVALID_READING", "attributes.door"},
		{"attribute 257 chars", item(map[string]any{"attributes": map[string]any{"note": strings.Repeat("é", 257)}}), "INVALID_READING", "attributes.note"},
		{"in the future", item(map[string]any{"time": at(6 * time.Minute)}), "READING_IN_FUTURE", "time"},
		{"too old", item(map[string]any{"time": at(-91 * 24 * time.Hour)}), "READING_TOO_OLD", "time"},
	}
	items := []map[string]any{item(nil)} // index 0: good
	for _, c := range cases {
		items = append(items, c.item)
	}
	got := a.postReadings(tok, batch(items...)).ingest(t)
	if got.Accepted != 1 || got.Duplicates != 0 || len(got.Rejected) != len(cases) {
		t.Fatalf("accepted %d, duplicates %d, %d rejected, want 1, 0, %d: %+v", got.Accepted, got.Duplicates, len(got.Rejected), len(cases), got.Rejected)
	}
	for i, c := range cases {
		r := got.Rejected[i]
		if r.Index != i+1 || r.Code != c.code || r.Field != c.field || r.Message == "" {
			t.Errorf("%s: rejected %+v, want index %d code %s field %s", c.name, r, i+1, c.code, c.field)
		}
	}
	// Bounds held exactly: 256 characters, 32 attributes, the range ends.
	edge := map[string]any{}
	for i := range 31 {
		edge[fmt.Sprintf("a%d", i)] = i
	}
	edge[strings.Repeat("n", 64)] = strings.Repeat("é", 256)
	ok := a.postReadings(tok, batch(item(map[string]any{"time": at(-30 * time.Second), "lat": -90, "lon": 180, "speed": 500, "heading": 360,
		"odometer": 0, "engine_hours": 0, "altitude": -12.5, "ignition": false, "attributes": edge}))).ingest(t)
	if ok.Accepted != 1 || len(ok.Rejected) != 0 {
		t.Fatalf("the bounds themselves: %+v", ok)
	}
}

// TestReadingsBodyRejections: a malformed body is 400 INVALID_BODY (413
// above 1 MiB) and stores nothing, even beside good items.
func TestReadingsBodyRejections(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	good := fmt.Sprintf(`{"imei":%q,"time":%q}`, truck7, at(-time.Minute))
	items := make([]string, 1001)
	for i := range items {
		items[i] = fmt.Sprintf(`{"imei":%q,"time":%q}`, truck7, at(-time.Duration(i+1)*time.Second))
	}
	for _, c := range []struct{ name, body string }{
		{"not an object", `[` + good + `]`},
		{"readings missing", `{}`},
		{"readings null", `{"readings":null}`},
		{"readings an object", `{"readings":` + good + `}`},
		{"readings empty", `{"readings":[]}`},
		{"1001 items", `{"readings":[` + strings.Join(items, ",") + `]}`},
		{"an item null", `{"readings":[` + good + `,null]}`},
		{"an item a number", `{"readings":[` + good + `,7]}`},
		{"an item a list", `{"readings":[` + good + `,[]]}`},
		{"unknown top field", `{"readings":[` + good + `],"gateway":"x"}`},
		{"unknown item field", `{"readings":[` + good + `,{"imei":"1","time":"2027-01-01T00:00:00Z","Speed":3}]}`},
		{"repeated item key", `{"readings":[{"imei":"1","imei":"2","time":"2027-01-01T00:00:00Z"}]}`},
		{"non-UTF-8 value", "{\"readings\":[" + good + ",{\"imei\":\"\xff\xfe\",\"time\":\"2027-01-01T00:00:00Z\"}]}"},
		{"non-UTF-8 attribute", "{\"readings\":[{\"imei\":\"" + truck7 + "\",\"time\":\"" + at(-time.Minute) + "\",\"attributes\":{\"n\":\"\xc3\"}}]}"},
		{"not JSON", `{"readings":[` + good},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := a.postReadings(tok, c.body)
			if res.status != http.StatusBadRequest || res.errorCode(t) != "INVALID_BODY" {
				t.Fatalf("status %d: %s", res.status, res.raw)
			}
		})
	}
	big := `{"readings":[{"imei":"` + truck7 + `","time":"` + at(-time.Minute) + `","attributes":{"x":"` + strings.Repeat("x", 1<<20) + `"}}]}`
	if res := a.postReadings(tok, big); res.status != http.StatusRequestEntityTooLarge || res.errorCode(t) != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("over 1 MiB: %d %s", res.status, res.raw)
	}
	if n := a.count(t, "SELECT count(*) FROM positions"); n != 0 {
		t.Fatalf("%d positions stored by refused bodies", n)
	}
	// Near 1 MiB is still taken (the other bodies' 64 KiB does not apply).
	var near []string
	for i := range 1000 {
		near = append(near, fmt.Sprintf(`{"imei":%q,"time":%q,"attributes":{"note":%q}}`, truck7, at(-time.Duration(i+1)*time.Second), strings.Repeat("n", 200)))
	}
	body := `{"readings":[` + strings.Join(near, ",") + `]}`
	if len(body) < 200<<10 || len(body) > 1<<20 {
		t.Fatalf("body of %d bytes", len(body))
	}
	if got := a.postReadings(tok, body).ingest(t); got.Accepted != 1000 {
		t.Fatalf("1000 items near 1 MiB: %+v", got.Accepted)
	}
}

// TestReadingsManyBad: 1000 items of which 999 are bad: one stored, 999
// rejected by index.
func TestReadingsManyBad(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	items := make([]map[string]any, 1000)
	for i := range items {
		items[i] = map[string]any{"imei": truck7, "time": at(-time.Duration(i+1) * time.Second), "speed": 900}
	}
	items[500]["speed"] = 50
	got := a.postReadings(tok, batch(items...)).ingest(t)
	if got.Accepted != 1 || len(got.Rejected) != 999 {
		t.Fatalf("accepted %d, rejected %d", got.Accepted, len(got.Rejected))
	}
	for i, r := range got.Rejected {
		want := i
		if i >= 500 {
			want = i + 1
		}
		if r.Index != want || r.Field != "speed" {
			t.Fatalf("rejected[%d] = %+v", i, r)
		}
	}
}

// TestReadingsUnknownDevice: another tenant's device and a device that
// exists nowhere are answered byte for byte alike (but the index), and
// nothing is stored for either.
func TestReadingsUnknownDevice(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	bus := a.imeiOf(t, "Bus 101") // northwind's
	when := at(-time.Minute)
	got := a.postReadings(tok, batch(
		map[string]any{"imei": bus, "time": when},
		map[string]any{"imei": "000000000000000", "time": when},
		map[string]any{"imei": truck7, "time": when},
	))
	res := got.ingest(t)
	if res.Accepted != 1 || len(res.Rejected) != 2 {
		t.Fatalf("%+v", res)
	}
	var raw struct {
		Data struct {
			Rejected []json.RawMessage `json:"rejected"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got.raw, &raw); err != nil {
		t.Fatal(err)
	}
	a0 := bytes.Replace(raw.Data.Rejected[0], []byte(`"index":0`), []byte(`"index":N`), 1)
	a1 := bytes.Replace(raw.Data.Rejected[1], []byte(`"index":1`), []byte(`"index":N`), 1)
	if !bytes.Equal(a0, a1) || res.Rejected[0].Code != "UNKNOWN_DEVICE" {
		t.Fatalf("another tenant's device %s, a device nowhere %s", raw.Data.Rejected[0], raw.Data.Rejected[1])
	}
	if n := a.count(t, "SELECT count(*) FROM positions WHERE imei = ?", bus); n != 0 {
		t.Fatalf("%d positions stored for another tenant's device", n)
	}
}

// TestReadingsRefusals: the policy decides POST /readings: a subaccount
// never ingests, a read-only account and a token without the permission
// are refused; nothing is stored.
func TestReadingsRefusals(t *testing.T) {
	a := newTestAPI(t)
	body := batch(map[string]any{"imei": truck7, "time": at(-time.Minute)})
	for _, c := range []struct{ token, code string }{
		{"acme-night-all", "PRIVILEGE_REQUIRED"},   // a subaccount of acme, Truck 7 granted
		{"umbrella-all", "READ_ONLY_ACCOUNT"},      // a read-only user
		{"globex-read", "TOKEN_PERMISSION_DENIED"}, // GET * only
	} {
		res := a.postReadings(demoToken(t, c.token), body)
		if res.status != http.StatusForbidden || res.errorCode(t) != c.code {
			t.Errorf("%s: %d %s, want 403 %s", c.token, res.status, res.raw, c.code)
		}
	}
	if n := a.count(t, "SELECT count(*) FROM positions"); n != 0 {
		t.Fatalf("%d positions stored by refused requests", n)
	}
}

// TestPositionsScope: GET /objects/{id}/positions in the objects data
// scope: another tenant's device is 404 like a device that does not
// exist; a subaccount sees its granted device only.
func TestPositionsScope(t *testing.T) {
	a := newTestAPI(t)
	acme := demoToken(t, "acme-all")
	a.postReadings(acme, batch(map[string]any{"imei": truck7, "time": at(-time.Minute), "speed": 12})).ingest(t)
	id := func(name string) int64 {
		return int64(a.count(t, "SELECT id FROM objects WHERE name = ?", name))
	}
	path := func(id int64) string { return fmt.Sprintf("/api/v2/objects/%d/positions", id) }
	for _, c := range []struct {
		token  string
		device int64
		status int
	}{
		{"acme-all", id("Truck 7"), 200},
		{"acme-night-all", id("Truck 7"), 200}, // granted
		{"acme-night-all", id("Van 12"), 404},  // not granted
		{"northwind-all", id("Truck 7"), 404},  // another tenant's
		{"northwind-all", 999999999, 404},      // nowhere
		{"fleetco-all", id("Truck 7"), 200},    // its managed account's
	} {
		res := a.get(path(c.device), demoToken(t, c.token))
		if res.status != c.status {
			t.Errorf("%s on %d: %d %s, want %d", c.token, c.device, res.status, res.raw, c.status)
		}
		if c.status == 200 && len(res.body["data"].([]any)) != 1 {
			t.Errorf("%s: %v", c.token, res.body["data"])
		}
	}
	for _, q := range []string{"from=yesterday", "to=" + atS(-40*24*time.Hour) + "&from=" + atS(0), "per_page=501", "per_page=0", "color=red",
		"from=" + atS(-40*24*time.Hour) + "&to=" + atS(0), "from=" + at(-time.Hour)} {
		if res := a.get(path(id("Truck 7"))+"?"+strings.ReplaceAll(q, "+", "%2B"), acme); res.status != 400 || res.errorCode(t) != "INVALID_PARAMETER" {
			t.Errorf("?%s: %d %s", q, res.status, res.raw)
		}
	}
}

// TestReadingsConcurrentReplicas: two servers post batches on the same
// devices at once, every batch holding every device in both orders: no
// 5xx (no deadlock), and every reading stored once.
func TestReadingsConcurrentReplicas(t *testing.T) {
	a := newTestAPI(t)
	b := newReplica(t, a, nil, 100000)
	c := newReplica(t, a, nil, 100000)
	tok := demoToken(t, "fleetco-all")
	devices := []string{truck7, a.imeiOf(t, "Van 12"), a.imeiOf(t, "Forklift 3"), a.imeiOf(t, "Reefer 21"), a.imeiOf(t, "Pickup 4")}
	base := time.Now().UTC().Add(-time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fails []string
	for w, srv := range []*testAPI{b, c, b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 10 {
				var items []map[string]any
				for k := range devices {
					dev := devices[k]
					if w%2 == 1 {
						dev = devices[len(devices)-1-k]
					}
					ts := base.Add(time.Duration(n*10+w) * time.Second)
					items = append(items, map[string]any{"imei": dev, "time": ts.Format(time.RFC3339Nano), "speed": n})
				}
				r := sendRaw(srv.handler, http.MethodPost, "/api/v2/readings", tok, batch(items...), "Content-Type", "application/json")
				if r.status != http.StatusOK {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("%d %s", r.status, r.raw))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(fails) > 0 {
		t.Fatalf("%d batches failed: %v", len(fails), fails[0])
	}
	if n := a.count(t, "SELECT count(*) FROM positions"); n != 4*10*len(devices) {
		t.Fatalf("%d positions, want %d", n, 4*10*len(devices))
	}
}

// TestReadingsListVersionsUnmoved: the state a reading writes is not one
// of the columns the objects' list versions watch, so a batch moves no
// list version (no kept list page is thrown away by ingestion).
func TestReadingsListVersionsUnmoved(t *testing.T) {
	a := newTestAPI(t)
	versions := func() string {
		var s string
		if err := a.db.NewRaw("SELECT coalesce(string_agg(c::text, ',' ORDER BY c::text), '') || ' / ' || (SELECT generation::text FROM count_generation) FROM account_row_counts AS c WHERE resource = 'objects'").Scan(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := versions()
	a.postReadings(demoToken(t, "acme-all"), batch(map[string]any{"imei": truck7, "time": at(-time.Minute), "speed": 30, "odometer": 200000,
		"attributes": map[string]any{"door": true}})).ingest(t)
	if after := versions(); after != before {
		t.Fatalf("list versions moved:\nbefore %s\nafter  %s", before, after)
	}
}
