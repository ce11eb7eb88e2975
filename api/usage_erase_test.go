package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// TestUsageOutlivesErase is issue 34 item 4: usage is billing data. A
// subaccount makes 42 requests (30 flushed before its erase, 12 still in
// the meter's memory), then its user erases it: the billing export still
// shows 42, under the erased account's id without its username, billed
// to the tenant's top account (fleetco); GET /usage still shows them to
// the accounts that were above it (the user that erased it, its manager,
// an admin) and to nobody else; the erased account itself is 404.
func TestUsageOutlivesErase(t *testing.T) {
	base := newTestAPI(t)
	ctx := context.Background()
	day := time.Date(2026, 4, 7, 9, 0, 0, 0, time.UTC)
	srv, meter := meteredServer(t, base, func() time.Time { return day })
	night, fleetco := base.accountID(t, "acme-night"), base.accountID(t, "fleetco")
	tok := demoToken(t, "acme-night-all")
	send := func(n int) {
		t.Helper()
		for range n {
			if r := srv.get("/api/v2/me", tok); r.status != http.StatusOK {
				t.Fatalf("GET /me: %d %s", r.status, r.raw)
			}
		}
	}
	send(30)
	if err := meter.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	send(12)
	if r := base.send("DELETE", fmt.Sprint("/api/v2/accounts/", night), demoToken(t, "acme-all"), ""); r.status != http.StatusNoContent {
		t.Fatalf("erase: %d %s", r.status, r.raw)
	}
	if err := meter.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var exported []storage.UsageRow
	d := storage.NewDate(day)
	if err := base.store.ExportUsage(ctx, d, d, func(r storage.UsageRow) error {
		if r.AccountID == night {
			exported = append(exported, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(exported) != 1 || exported[0].Requests != 42 || exported[0].Username != storage.ErasedMark ||
		exported[0].BilledAccountID != fleetco || exported[0].BilledUsername != "fleetco" {
		t.Fatalf("the export after the erase: %+v, want 42 requests of %d as %q billed to fleetco (%d)", exported, night, storage.ErasedMark, fleetco)
	}

	query := "from=2026-04-07&to=2026-04-07"
	for _, c := range []struct {
		token string
		sees  bool
	}{{"acme-all", true}, {"fleetco-all", true}, {"admin-all", true}, {"globex-read", false}, {"northwind-all", false}} {
		items, _ := usageItems(t, base, demoToken(t, c.token), query)
		var requests int64
		for _, u := range items {
			if u.AccountID == night {
				requests += u.Requests
			}
		}
		if c.sees && requests != 42 || !c.sees && requests != 0 {
			t.Errorf("%s: GET /usage shows %d requests of the erased subaccount, want %v", c.token, requests, c.sees)
		}
	}
	denial(t, base.get(fmt.Sprintf("/api/v2/usage?%s&account_id=%d", query, night), demoToken(t, "acme-all")), http.StatusNotFound, "NOT_FOUND", "")
}
