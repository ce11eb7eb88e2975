package main

import (
	"context"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestServeRunsTheClock: `fleetapi serve` runs the clock's rules every
// FLEET_CLOCK_INTERVAL while it holds their lease: a device silent for
// longer than its connection_no rule's minutes is notified once, and the
// lease is released on a graceful stop.
func TestServeRunsTheClock(t *testing.T) {
	db := storagetest.New(t)
	env := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_CLOCK_INTERVAL": "50ms"}
	runOK(t, env, "import", writeDemoFile(t))
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE objects SET last_time = now() - interval '2 hours' WHERE imei = '356938035643809'`,
		`INSERT INTO events (account_id, name, type, active, checked_value, imei)
			SELECT account_id, 'clock-silent', 'connection_no', true, '30', '{356938035643809}' FROM objects WHERE imei = '356938035643809'`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s := startUsageServer(t, env)
	count := func() (n int) {
		t.Helper()
		if err := db.NewRaw(`SELECT count(*) FROM notifications WHERE type = 'connection_no' AND imei = '356938035643809'`).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A safety net, not a measure: the clock sweeps every 50 ms.
	for deadline := time.Now().Add(30 * time.Second); count() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no connection_no after 30 s; log:\n%s", s.logs.String())
		}
	}
	var leases int
	if err := db.NewRaw(`SELECT count(*) FROM fleet_leases WHERE name = 'clock_rules'`).Scan(ctx, &leases); err != nil || leases != 1 {
		t.Fatalf("%d clock leases while serving (%v)", leases, err)
	}
	s.stop()
	if n := count(); n != 1 {
		t.Fatalf("%d connection_no notifications for one silence", n)
	}
	if err := db.NewRaw(`SELECT count(*) FROM fleet_leases WHERE name = 'clock_rules'`).Scan(ctx, &leases); err != nil || leases != 0 {
		t.Fatalf("the lease was not released on stop: %d (%v)", leases, err)
	}
}
