package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// insertNotification stores a notification of the device imei, owned by
// the device's account, as the ingestion would (real rows, plain SQL);
// it returns its id.
func insertNotification(t testing.TB, db *storagetest.DB, imei, typ, message string) int64 {
	t.Helper()
	var id int64
	if err := db.NewRaw(`INSERT INTO notifications (account_id, type, imei, object_id, time, value, message)
		SELECT o.account_id, ?, o.imei, o.id, now(), '1', ? FROM objects o WHERE o.imei = ? RETURNING id`, typ, message, imei).
		Scan(context.Background(), &id); err != nil {
		t.Fatalf("insert a notification of %s: %v", imei, err)
	}
	return id
}

// The demo devices the notification tests name.
const (
	acmeTruck   = "356938035643809" // acme's, granted to acme-night
	acmeVan     = "356938035643817" // acme's, not granted to acme-night
	globexReefr = "861073032104551"
)

func notificationIDs(t *testing.T, r response) []int64 {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	items, _ := r.body["data"].([]any)
	out := make([]int64, len(items))
	for i, it := range items {
		out[i] = int64(it.(map[string]any)["id"].(float64))
	}
	return out
}

// TestNotificationsList: newest first by default, the filters type, imei
// and event_id, the range from/to, paging and the after cursor, and the
// scope (acme sees its own, fleetco its tree's, globex only its own).
func TestNotificationsList(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	acme := demoToken(t, "acme-all")
	var ids []int64
	for i := range 7 {
		ids = append(ids, insertNotification(t, a.db, acmeVan, "list_test", fmt.Sprintf("m%d", i)))
	}
	got := notificationIDs(t, a.get("/api/v2/notifications?type=list_test", acme))
	if len(got) != 7 || got[0] != ids[6] || got[6] != ids[0] {
		t.Fatalf("type=list_test: %v, want %v newest first", got, ids)
	}
	if got := notificationIDs(t, a.get("/api/v2/notifications?type=list_test&order=asc", acme)); got[0] != ids[0] {
		t.Fatalf("order=asc: %v", got)
	}
	// paging and the after cursor walk the same newest-first order
	p1 := a.get("/api/v2/notifications?type=list_test&per_page=3", acme)
	first := notificationIDs(t, p1)
	if fmt.Sprint(first) != fmt.Sprint([]int64{ids[6], ids[5], ids[4]}) {
		t.Fatalf("page 1: %v", first)
	}
	meta := p1.body["meta"].(map[string]any)
	if meta["total"].(float64) != 7 {
		t.Fatalf("total %v, want 7", meta["total"])
	}
	next, _ := meta["next"].(string)
	if next == "" {
		t.Fatalf("no meta.paging.next: %s", p1.raw)
	}
	after := notificationIDs(t, a.get("/api/v2/notifications?type=list_test&per_page=3&after="+url.QueryEscape(next), acme))
	if fmt.Sprint(after) != fmt.Sprint([]int64{ids[3], ids[2], ids[1]}) {
		t.Fatalf("after page 1: %v", after)
	}
	page2 := notificationIDs(t, a.get("/api/v2/notifications?type=list_test&per_page=3&page=2", acme))
	if fmt.Sprint(page2) != fmt.Sprint(after) {
		t.Fatalf("page 2 %v, after %v", page2, after)
	}
	// the demo rows: imei, event_id and the range
	if got := notificationIDs(t, a.get("/api/v2/notifications?imei="+acmeTruck, acme)); len(got) != 2 {
		t.Fatalf("imei=%s: %v, want the 2 demo notifications of Truck 7", acmeTruck, got)
	}
	var event int64
	if err := a.db.NewRaw(`SELECT event_id FROM events WHERE name = 'Truck 7 overspeed'`).Scan(context.Background(), &event); err != nil {
		t.Fatal(err)
	}
	if got := notificationIDs(t, a.get(fmt.Sprintf("/api/v2/notifications?event_id=%d", event), acme)); len(got) != 1 {
		t.Fatalf("event_id=%d: %v, want 1", event, got)
	}
	ranged := notificationIDs(t, a.get("/api/v2/notifications?from=2026-01-15T10:00:00Z&to=2026-01-16T00:00:00Z", acme))
	if len(ranged) != 1 {
		t.Fatalf("from/to: %v, want only the 10:05 demo notification (to is exclusive)", ranged)
	}
	for _, q := range []string{"from=yesterday", "to=2026-01-15", "from=2026-01-16T00:00:00Z&to=2026-01-15T00:00:00Z", "since=1"} {
		r := a.get("/api/v2/notifications?"+q, acme)
		if r.status != http.StatusBadRequest || r.errorCode(t) != "INVALID_PARAMETER" {
			t.Errorf("%s: %d %s, want 400 INVALID_PARAMETER", q, r.status, r.raw)
		}
	}
	// scope: fleetco sees acme's and globex's; globex none of acme's
	if got := notificationIDs(t, a.get("/api/v2/notifications?type=list_test", demoToken(t, "fleetco-all"))); len(got) != 7 {
		t.Fatalf("fleetco: %v, want acme's 7", got)
	}
	if got := notificationIDs(t, a.get("/api/v2/notifications?type=list_test", demoToken(t, "globex-read"))); len(got) != 0 {
		t.Fatalf("globex sees acme's notifications: %v", got)
	}
}

// TestNotificationByID: one notification in scope; another tenant's id
// answers exactly like an id that does not exist (404 NOT_FOUND).
func TestNotificationByID(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	id := insertNotification(t, a.db, acmeTruck, "overspeed", "by id")
	r := a.get(fmt.Sprintf("/api/v2/notifications/%d", id), demoToken(t, "acme-all"))
	if r.status != http.StatusOK {
		t.Fatalf("own: %d %s", r.status, r.raw)
	}
	data := r.body["data"].(map[string]any)
	if data["imei"] != acmeTruck || data["message"] != "by id" || data["event_id"] != nil {
		t.Fatalf("data %v", data)
	}
	other := a.get(fmt.Sprintf("/api/v2/notifications/%d", id), demoToken(t, "globex-read"))
	missing := a.get("/api/v2/notifications/999999999", demoToken(t, "globex-read"))
	if other.status != http.StatusNotFound || other.errorCode(t) != "NOT_FOUND" {
		t.Fatalf("another tenant's: %d %s", other.status, other.raw)
	}
	oe, _ := json.Marshal(other.body["error"])
	me, _ := json.Marshal(missing.body["error"])
	if string(oe) != string(me) {
		t.Fatalf("another tenant's id answers %s, a missing one %s", oe, me)
	}
}
