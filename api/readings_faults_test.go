package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestReadingsDatabaseLostMidBatch: the connection of a batch is lost
// after its devices are locked, while its positions insert waits (a
// partition held by another transaction, then pg_terminate_backend, as a
// failover does): the answer is 503 SERVICE_UNAVAILABLE and nothing of the
// batch is stored, neither positions nor the device's state.
func TestReadingsDatabaseLostMidBatch(t *testing.T) {
	a := newTestAPI(t)
	ctx := context.Background()
	tok := demoToken(t, "acme-all")
	body, done, release := postBlockedAtInsert(t, a, tok)
	// The batch waits at its insert: kill its backend.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var killed int
		err := a.db.NewRaw(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO positions%') k`).Scan(ctx, &killed)
		if err != nil {
			t.Fatal(err)
		}
		if killed > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch never waited at its positions insert")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := <-done
	release()
	if r.status != http.StatusServiceUnavailable || r.code != "SERVICE_UNAVAILABLE" {
		t.Fatalf("lost mid-batch: %d %s, want 503 SERVICE_UNAVAILABLE", r.status, r.raw)
	}
	if n := a.count(t, "SELECT count(*) FROM positions"); n != 0 {
		t.Fatalf("%d positions of the lost batch", n)
	}
	if n := a.count(t, "SELECT count(*) FROM objects WHERE last_time IS NOT NULL OR odometer = 130000"); n != 0 {
		t.Fatalf("the lost batch moved %d devices", n)
	}
	// The same batch again, the database back: stored whole.
	if got := a.postReadings(tok, body).ingest(t); got.Accepted != 2 {
		t.Fatalf("retry: %+v", got)
	}
}

// TestReadingsFireRulesOnce: an overspeed rule of the device's account
// fires on each rise above its limit, once, and re-arms below it; a
// retried batch is all duplicates and fires nothing again; an older
// reading is history only, never evaluated; a rule of another device or
// an inactive rule never fires.
func TestReadingsFireRulesOnce(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	acme := a.accountID(t, "acme")
	a.exec(t, `INSERT INTO events (account_id, name, type, active, checked_value, imei) VALUES
		(?, 'zq fast', 'overspeed', true, '100', '{}'),
		(?, 'zq fast other', 'overspeed', true, '10', ?),
		(?, 'zq fast off', 'overspeed', false, '10', '{}')`, acme, acme, "{"+a.imeiOf(t, "Van 12")+"}", acme)
	// The demo data holds notifications of other accounts, and acme's own
	// rules (its Truck 7 overspeed) fire too: the test counts those of its
	// rules, and the other accounts' before and after.
	others := a.count(t, "SELECT count(*) FROM notifications WHERE account_id <> ?", acme)
	base := time.Now().UTC().Add(-time.Hour)
	var items []map[string]any
	for i, speed := range []float64{50, 120, 130, 60, 110} {
		items = append(items, map[string]any{"imei": truck7, "time": base.Add(time.Duration(i) * time.Minute).Format(time.RFC3339Nano), "speed": speed})
	}
	body := batch(items...)
	if got := a.postReadings(tok, body).ingest(t); got.Accepted != 5 {
		t.Fatalf("%+v", got)
	}
	notes := func() string {
		var s string
		if err := a.db.NewRaw(`SELECT coalesce(string_agg(n.type || '@' || n.value || '/' || e.name, ' ' ORDER BY n.time), '')
			FROM notifications n JOIN events e ON e.event_id = n.event_id WHERE n.imei = ? AND e.name LIKE 'zq %'`, truck7).Scan(context.Background(), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const want = "overspeed@120/zq fast overspeed@110/zq fast"
	if got := notes(); got != want {
		t.Fatalf("notifications %q, want %q", got, want)
	}
	if again := a.postReadings(tok, body).ingest(t); again.Duplicates != 5 || again.Accepted != 0 {
		t.Fatalf("retry %+v", again)
	}
	older := a.postReadings(tok, batch(map[string]any{"imei": truck7, "time": base.Add(-time.Minute).Format(time.RFC3339Nano), "speed": 200})).ingest(t)
	if older.Accepted != 1 {
		t.Fatalf("older %+v", older)
	}
	if got := notes(); got != want {
		t.Fatalf("after a retry and an older reading: %q, want %q", got, want)
	}
	if n := a.count(t, "SELECT count(*) FROM notifications WHERE account_id <> ?", acme); n != others {
		t.Fatal(fmt.Sprint(n-others, " notifications of another account"))
	}
}

// TestReadingsStateThatDoesNotDecode: a device whose evaluation state was
// written behind the server's back (one that does not decode as
// rules.State) is not stuck: its readings are accepted and evaluated from a
// zero state, every rule armed.
func TestReadingsStateThatDoesNotDecode(t *testing.T) {
	a := newTestAPI(t)
	tok := demoToken(t, "acme-all")
	a.exec(t, `UPDATE objects SET rule_state = '{"rules": 5, "prev": "x"}' WHERE imei = ?`, truck7)
	got := a.postReadings(tok, batch(map[string]any{"imei": truck7, "time": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano), "speed": 150})).ingest(t)
	if got.Accepted != 1 || len(got.Rejected) != 0 {
		t.Fatalf("%+v", got)
	}
	if n := a.count(t, `SELECT count(*) FROM objects WHERE imei = ? AND jsonb_typeof(rule_state->'rules') = 'object'`, truck7); n != 1 {
		t.Fatal("the state was not written anew")
	}
}

// postBlockedAtInsert posts a batch of two readings (Truck 7, Van 12, a
// minute ago) while another transaction holds the day's positions
// partition ACCESS EXCLUSIVE until the test ends: the batch waits at its
// positions insert, its devices locked. It returns the batch, where its
// answer arrives and the release of the partition (also at the test's end).
func postBlockedAtInsert(t *testing.T, a *testAPI, tok string) (string, chan loadResult, func()) {
	t.Helper()
	ctx := context.Background()
	when := time.Now().UTC().Add(-time.Minute)
	part := "positions_" + when.Format("20060102")
	a.exec(t, "SELECT ensure_positions_partitions(?::date, ?::date)", when.Format(time.DateOnly), when.Format(time.DateOnly))
	blocker, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	release := func() { _ = blocker.Rollback() }
	t.Cleanup(release)
	if _, err := blocker.ExecContext(ctx, "LOCK TABLE "+part+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	body := batch(
		map[string]any{"imei": truck7, "time": when.Format(time.RFC3339Nano), "speed": 80, "odometer": 130000},
		map[string]any{"imei": a.imeiOf(t, "Van 12"), "time": when.Format(time.RFC3339Nano), "speed": 70},
	)
	done := make(chan loadResult, 1)
	go func() {
		done <- sendRaw(a.handler, http.MethodPost, "/api/v2/readings", tok, body)
	}()
	return body, done, release
}
