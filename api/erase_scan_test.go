package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// erasedWorld is what TestEraseLeavesNothing plants through the API: a
// customer of the demo manager fleetco, its subaccount, their devices,
// tokens and passengers, every personal value holding "zq-erin" (or an
// IMEI of the 9900 series), so that a scan finds each of them wherever it
// is stored.
type erasedWorld struct {
	erin, erinInt int64
	// the token secrets of erin and of its subaccount
	erinTok, intTok string
	// the keyed create of erin by fleetco, for the replay after the erase
	createBody string
}

// erasedNeedles find every value that names the erased subtree: its
// names, e-mails, device and token names and passengers' names all hold
// "zq-erin"; the IMEIs are erin's own two and one moved to erin from
// globex; then the passengers' phones.
var erasedNeedles = []string{"zq-erin", "990000000000011", "990000000000029", "990000000000037", "+351 990 000"}

// plantErased builds the erased subtree through the API, each kind of
// stored response and audit event at least once: made by the erased
// accounts, by their creator (fleetco) and by an admin, keyed and not;
// each personal field alone (an e-mail change, a move that names an IMEI
// only, a grant list) and together (a create).
func plantErased(t *testing.T, a *testAPI) erasedWorld {
	t.Helper()
	mgr, admin := demoToken(t, "fleetco-all"), demoToken(t, "admin-all")
	fleetco, globex, globexDay := a.accountID(t, "fleetco"), a.accountID(t, "globex"), a.accountID(t, "globex-day")
	var w erasedWorld
	created := func(r response) map[string]any {
		t.Helper()
		if r.status != http.StatusCreated {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		return r.data(t)
	}
	ok := func(r response) {
		t.Helper()
		if r.status/100 != 2 {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	}
	id := func(d map[string]any) int64 { return int64(d["id"].(float64)) }

	// fleetco onboards erin (keyed) and mints its token (keyed).
	w.createBody = fmt.Sprintf(`{"username":"zq-erin","email":"ops@zq-erin.example","type":"user","manager_id":%d}`, fleetco)
	w.erin = id(created(a.send("POST", "/api/v2/accounts", mgr, w.createBody, "Idempotency-Key", "onboard")))
	w.erinTok = created(a.send("POST", "/api/v2/tokens", mgr,
		fmt.Sprintf(`{"account_id":%d,"name":"zq-erin-root","permissions":["*"]}`, w.erin), "Idempotency-Key", "erin-token"))["secret"].(string)
	// erin's own writes, keyed and not, with request ids that name it.
	w.erinInt = id(created(a.send("POST", "/api/v2/accounts", w.erinTok,
		fmt.Sprintf(`{"username":"zq-erin-int","email":"api@zq-erin.example","type":"subaccount","manager_id":%d,"privileges":["reports"]}`, w.erin),
		"Idempotency-Key", "sub", "X-Request-Id", "zq-erin-req-1")))
	w.intTok = created(a.send("POST", "/api/v2/tokens", w.erinTok,
		fmt.Sprintf(`{"account_id":%d,"name":"zq-erin-int-token","permissions":["*"]}`, w.erinInt), "Idempotency-Key", "sub-token"))["secret"].(string)
	spare := created(a.send("POST", "/api/v2/tokens", w.erinTok, `{"name":"zq-erin-spare","permissions":["GET /me"]}`, "X-Request-Id", "zq-erin-req-2"))
	ok(a.send("DELETE", fmt.Sprint("/api/v2/tokens/", id(spare)), w.erinTok, ""))
	// devices: one by fleetco (keyed), one by an admin (not keyed; its
	// token for erin keyed), one that globex held and granted first, moved
	// to erin.
	created(a.send("POST", "/api/v2/objects", mgr, fmt.Sprintf(`{"imei":"990000000000011","name":"zq-erin Truck","account_id":%d}`, w.erin),
		"Idempotency-Key", "truck"))
	created(a.send("POST", "/api/v2/objects", admin, fmt.Sprintf(`{"imei":"990000000000029","name":"zq-erin Van","account_id":%d}`, w.erin)))
	created(a.send("POST", "/api/v2/tokens", admin, fmt.Sprintf(`{"account_id":%d,"name":"zq-erin-support","permissions":["GET /me"]}`, w.erin),
		"Idempotency-Key", "support"))
	moved := id(created(a.send("POST", "/api/v2/objects", mgr, fmt.Sprintf(`{"imei":"990000000000037","name":"zq-erin Reefer","account_id":%d}`, globex),
		"Idempotency-Key", "reefer")))
	ok(a.send("PUT", fmt.Sprintf("/api/v2/accounts/%d/objects", globexDay), mgr, `{"imei":["861073032104551","990000000000037"]}`))
	ok(a.send("PUT", fmt.Sprintf("/api/v2/accounts/%d/objects", globexDay), mgr, `{"imei":["861073032104551"]}`))
	// readings (docs/design.md §14): one of the reefer while globex held it
	// (its position names globex), then erin's devices' own; a
	// notification and a service's notified state of erin's device.
	readings := func(tok, imei string, ago time.Duration) {
		t.Helper()
		body := fmt.Sprintf(`{"readings":[{"imei":%q,"time":%q,"speed":42,"attributes":{"driver":"zq-erin driver"}}]}`,
			imei, time.Now().UTC().Add(-ago).Format(time.RFC3339Nano))
		r := a.send("POST", "/api/v2/readings", tok, body)
		if r.status != http.StatusOK || !strings.Contains(string(r.raw), `"accepted":1`) {
			t.Fatalf("readings: %d %s", r.status, r.raw)
		}
	}
	readings(mgr, "990000000000037", 2*time.Hour)
	ok(a.send("PATCH", fmt.Sprint("/api/v2/objects/", moved), mgr, fmt.Sprintf(`{"account_id":%d}`, w.erin)))
	readings(w.erinTok, "990000000000011", time.Hour)
	readings(w.erinTok, "990000000000037", time.Hour)
	a.exec(t, `INSERT INTO notifications (account_id, type, imei, object_id, time, value, message)
		SELECT account_id, 'overspeed', imei, id, now(), '130', 'zq-erin Truck: overspeed' FROM objects WHERE imei = '990000000000011'`)
	// each personal field alone: an e-mail change (fleetco's, erin's)
	ok(a.send("PATCH", fmt.Sprint("/api/v2/accounts/", w.erin), mgr, `{"email":"billing@zq-erin.example"}`))
	ok(a.send("PATCH", fmt.Sprint("/api/v2/accounts/", w.erinInt), w.erinTok, `{"email":"api2@zq-erin.example"}`))
	ok(a.send("PUT", fmt.Sprintf("/api/v2/accounts/%d/objects", w.erinInt), w.erinTok, `{"imei":["990000000000011","990000000000037"]}`))
	// passengers, keyed and not, by erin and by its subaccount (owned by erin)
	created(a.post(`{"passenger_name":"zq-erin Rider","passenger_email":"rider@zq-erin.example","passenger_phone":"+351 990 000 001"}`,
		w.erinTok, "Idempotency-Key", "rider"))
	created(a.post(`{"passenger_name":"zq-erin Guest","passenger_phone":"+351 990 000 002"}`, w.intTok, "Idempotency-Key", "guest"))
	created(a.post(`{"passenger_name":"zq-erin Walk-in"}`, w.erinTok))
	// a zone of erin's, keyed (its stored response and zone.create's audit
	// event name it)
	created(a.send("POST", "/api/v2/zones", w.erinTok, `{"name":"zq-erin Yard","kind":"circle","center":{"lat":38.7,"lon":-9.1},"radius_m":200}`,
		"Idempotency-Key", "yard"))
	// fleetco's report definitions and event rules naming erin's devices
	// (the import writes those): one also names acme's device, one names
	// only erin's.
	a.exec(t, `INSERT INTO reports (account_id, name, type, imei) VALUES (?, 'mixed', 'general', '{356938035643809,990000000000011}'),
		(?, 'only erin', 'general', '{990000000000029}'), (?, 'erin own', 'general', '{990000000000011}')`, fleetco, fleetco, w.erin)
	a.exec(t, `INSERT INTO events (account_id, name, type, imei) VALUES (?, 'mixed', 'overspeed', '{990000000000037,356938035643809}'),
		(?, 'only erin', 'overspeed', '{990000000000011,990000000000029}')`, fleetco, fleetco)
	return w
}

// TestEraseLeavesNothing is issue 34 item 5 and issue 39 item 2: after
// DELETE /accounts/{id}, no text, varchar, char, JSON or text-array column
// of any table (read from information_schema, so that a new table or
// column is scanned too) holds a username, an e-mail, an IMEI, a device
// name, a token name, a passenger's data or a request id of the erased
// subtree, whoever stored it: the stored responses of keyed creates made
// by the creator and an admin as well as by the erased accounts, the
// audit events about the erased accounts, devices and tokens and those of
// other accounts naming an erased device (a grant list of another
// tenant's subaccount, a device's creation by its first owner), other
// accounts' report definitions and event rules. Before the erase the same
// scan finds each kind where it was planted. What the erase keeps of
// others stays (acme's device in fleetco's report); a replay of the
// erased account's keyed create is a new request.
func TestEraseLeavesNothing(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	w := plantErased(t, a)

	before, err := storagetest.Scan(ctx, a.db, erasedNeedles)
	if err != nil {
		t.Fatal(err)
	}
	planted := map[string]bool{}
	for _, o := range before {
		planted[o.Table+"."+o.Column] = true
	}
	for _, col := range []string{"accounts.username", "accounts.email", "objects.imei", "objects.name", "tokens.name",
		"passengers.passenger_name", "passengers.passenger_email", "passengers.passenger_phone", "object_grants.imei",
		"reports.imei", "events.imei", "idempotency_keys.response", "audit_events.changes", "audit_events.request_id",
		"positions.imei", "positions.attributes", "objects.attributes", "notifications.imei", "notifications.message", "zones.name"} {
		if !planted[col] {
			t.Errorf("the test world plants nothing in %s", col)
		}
	}
	outside := func(table string) string {
		t.Helper()
		var rows []string
		if err := a.db.NewRaw(fmt.Sprintf("SELECT name || ':' || array_to_string(imei, ',') FROM %s WHERE account_id = ? ORDER BY name", table),
			a.accountID(t, "fleetco")).Scan(ctx, &rows); err != nil {
			t.Fatal(err)
		}
		return strings.Join(rows, " ")
	}

	if r := a.send("DELETE", fmt.Sprint("/api/v2/accounts/", w.erin), demoToken(t, "fleetco-all"), ""); r.status != http.StatusNoContent {
		t.Fatalf("erase: %d %s", r.status, r.raw)
	}
	after, err := storagetest.Scan(ctx, a.db, erasedNeedles)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range after {
		t.Errorf("after the erase %s", o)
	}

	// What names others stays: fleetco's definitions keep acme's device;
	// those that named only erin's devices are gone.
	if got := outside("reports"); got != "mixed:356938035643809" {
		t.Errorf("fleetco's reports after the erase: %q", got)
	}
	if got := outside("events"); got != "mixed:356938035643809" {
		t.Errorf("fleetco's event rules after the erase: %q", got)
	}
	var scrubbed []string
	if err := a.db.NewRaw(`SELECT changes::text FROM audit_events WHERE changes::text LIKE ? ORDER BY id`, "%"+storage.ErasedMark+"%").
		Scan(ctx, &scrubbed); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(scrubbed, func(c string) bool { return strings.Contains(c, "861073032104551") }) {
		t.Errorf("globex-day's grant list lost its own device with erin's: %q", scrubbed)
	}
	// The erased account's keyed create, replayed: a new request.
	r := a.send("POST", "/api/v2/accounts", demoToken(t, "fleetco-all"), w.createBody, "Idempotency-Key", "onboard")
	if r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") == "true" || int64(r.data(t)["id"].(float64)) == w.erin {
		t.Errorf("replay of the erased account's create: %d replayed=%q %s", r.status, r.header.Get("Idempotent-Replayed"), r.raw)
	}
}
