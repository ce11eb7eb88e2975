package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestQuotaExceeded runs the real server with a platform default
// passengers quota (FLEET_QUOTA_PASSENGERS) two above what acme owns:
// acme creates two passengers, and the third create is 403 QUOTA_EXCEEDED
// with details {quota, limit, used} (docs/design.md §12), the row not created.
func TestQuotaExceeded(t *testing.T) {
	ctx := context.Background()
	db := storagetest.New(t)
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	owned := func() int64 {
		var n int64
		if err := db.NewRaw(`SELECT count(*) FROM passengers WHERE account_id = (SELECT id FROM accounts WHERE username = 'acme')`).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	limit := owned() + 2
	origin := serve(t, db.URL, fmt.Sprintf("FLEET_QUOTA_PASSENGERS=%d", limit))
	create := func(i int) (int, map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"passenger_name": fmt.Sprintf("Quota %d", i)})
		req, _ := http.NewRequest(http.MethodPost, origin+"/api/v2/passengers", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token(t, "acme-all"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, env
	}
	for i := range 2 {
		if status, env := create(i); status != http.StatusCreated {
			t.Fatalf("create %d within the quota: %d %v", i, status, env)
		}
	}
	status, env := create(2)
	e, _ := env["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if status != http.StatusForbidden || e["code"] != "QUOTA_EXCEEDED" || d["quota"] != "passengers" ||
		d["limit"] != float64(limit) || d["used"] != float64(limit) {
		t.Fatalf("create above the quota: %d %v, want 403 QUOTA_EXCEEDED {passengers, %d, %d}", status, env, limit, limit)
	}
	if n := owned(); n != limit {
		t.Fatalf("acme owns %d passengers, want %d (the refused create left no row)", n, limit)
	}
}
