package storage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// clockWorld is a database with two tenants for the clock's rules: acme
// (devices 1..n, imei 35000000000000i) and globex (one device).
type clockWorld struct {
	t     *testing.T
	store *storage.Store
	db    *storagetest.DB
	acme  int64
	other int64
}

func newClockWorld(t *testing.T, devices int) *clockWorld {
	t.Helper()
	s, db := newStore(t)
	w := &clockWorld{t: t, store: s, db: db}
	w.exec(`INSERT INTO accounts (username, type, timezone) VALUES ('acme', 'user', 'Europe/Lisbon'), ('globex', 'user', 'UTC')`)
	w.scan(&w.acme, `SELECT id FROM accounts WHERE username = 'acme'`)
	w.scan(&w.other, `SELECT id FROM accounts WHERE username = 'globex'`)
	w.exec(`INSERT INTO objects (imei, account_id, name, lat, lon) SELECT '35000000000000' || i, ?, 'Truck ' || i, 38.7, -9.1
		FROM generate_series(1, ?) AS i`, w.acme, devices)
	w.exec(`INSERT INTO objects (imei, account_id, name) VALUES ('990000000000001', ?, 'Other')`, w.other)
	return w
}

func (w *clockWorld) exec(q string, args ...any) {
	w.t.Helper()
	if _, err := w.db.NewRaw(q, args...).Exec(context.Background()); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

func (w *clockWorld) scan(dst any, q string, args ...any) {
	w.t.Helper()
	if err := w.db.NewRaw(q, args...).Scan(context.Background(), dst); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

// notifications counts the notifications of a type.
func (w *clockWorld) notifications(typ string) int {
	w.t.Helper()
	var n int
	w.scan(&n, `SELECT count(*) FROM notifications WHERE type = ?`, typ)
	return n
}

// sweep runs SweepSilence at now and returns how many notifications it
// created.
func (w *clockWorld) sweep(now time.Time) int64 {
	w.t.Helper()
	res, err := w.store.SweepSilence(context.Background(), now)
	if err != nil {
		w.t.Fatalf("sweep at %s: %v", now, err)
	}
	return res.Created()
}

// TestSweepSilenceFiresOncePerSilence: connection_no fires from the clock
// once a device has been silent for its rule's minutes, once per silence,
// and again only after a reading (last_time moves) re-arms it; a device
// never heard from, an inactive rule, a rule naming another device, a
// malformed checked_value and another tenant's rule never fire. The
// notification carries the device's owner, rule, position and the clock's
// time, and the state is written back to the device.
func TestSweepSilenceFiresOncePerSilence(t *testing.T) {
	t.Parallel()
	w := newClockWorld(t, 3)
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	// device 1 and 2 heard from at t0; device 3 never.
	w.exec(`UPDATE objects SET last_time = ? WHERE imei IN ('350000000000001', '350000000000002', '990000000000001')`, t0)
	w.exec(`INSERT INTO events (account_id, name, type, active, checked_value, imei) VALUES
		(?, 'silent 10', 'connection_no', true, '10', '{350000000000001,350000000000003}'),
		(?, 'off', 'connection_no', false, '1', '{}'),
		(?, 'bad', 'connection_no', true, 'ten', '{}'),
		(?, 'theirs', 'connection_no', true, '1', '{350000000000001}')`, w.acme, w.acme, w.acme, w.other)
	var rule int64
	w.scan(&rule, `SELECT event_id FROM events WHERE name = 'silent 10'`)

	if n := w.sweep(t0.Add(9 * time.Minute)); n != 0 {
		t.Fatalf("9 minutes of silence: %d notifications", n)
	}
	now := t0.Add(10 * time.Minute)
	if n := w.sweep(now); n != 1 {
		t.Fatalf("10 minutes of silence: %d notifications, want 1", n)
	}
	var got struct {
		AccountID int64     `bun:"account_id"`
		EventID   *int64    `bun:"event_id"`
		ServiceID *int64    `bun:"service_id"`
		IMEI      string    `bun:"imei"`
		Time      time.Time `bun:"time"`
		Lat       *float64  `bun:"lat"`
		Lon       *float64  `bun:"lon"`
		Object    string    `bun:"object"`
	}
	w.scan(&got, `SELECT n.account_id, n.event_id, n.service_id, n.imei, n.time, n.lat, n.lon, o.name AS object
		FROM notifications n JOIN objects o ON o.id = n.object_id WHERE n.type = 'connection_no'`)
	if got.AccountID != w.acme || got.EventID == nil || *got.EventID != rule || got.ServiceID != nil || got.IMEI != "350000000000001" ||
		!got.Time.Equal(now) || got.Lat == nil || *got.Lat != 38.7 || got.Lon == nil || *got.Lon != -9.1 || got.Object != "Truck 1" {
		t.Fatalf("notification %+v", got)
	}
	var state string
	w.scan(&state, `SELECT rule_state::text FROM objects WHERE imei = '350000000000001'`)
	if state == "{}" {
		t.Fatal("the rule state was not written back")
	}
	for _, later := range []time.Duration{11 * time.Minute, time.Hour, 24 * time.Hour} {
		if n := w.sweep(t0.Add(later)); n != 0 {
			t.Fatalf("the same silence at +%s: %d more notifications", later, n)
		}
	}
	// A device whose state records the silence it fired for is not even
	// locked again (the candidates' query reads the state).
	if res, err := w.store.SweepSilence(context.Background(), t0.Add(2*time.Hour)); err != nil || res.Devices != 0 {
		t.Fatalf("re-sweep of a notified silence evaluated %d devices (%v), want 0", res.Devices, err)
	}
	// A reading (the ingest moves last_time) re-arms the rule.
	w.exec(`UPDATE objects SET last_time = ? WHERE imei = '350000000000001'`, t0.Add(25*time.Hour))
	if n := w.sweep(t0.Add(25*time.Hour + 5*time.Minute)); n != 0 {
		t.Fatalf("5 minutes after the reading: %d notifications", n)
	}
	if n := w.sweep(t0.Add(25*time.Hour + 10*time.Minute)); n != 1 {
		t.Fatalf("the next silence: %d notifications, want 1", n)
	}
	if n := w.notifications("connection_no"); n != 2 {
		t.Fatalf("%d connection_no notifications in all, want 2", n)
	}
	var others int
	w.scan(&others, `SELECT count(*) FROM notifications WHERE account_id <> ? OR imei <> '350000000000001'`, w.acme)
	if others != 0 {
		t.Fatalf("%d notifications for other devices or tenants", others)
	}
}

// TestSweepSilenceConcurrentFiresOnce: two sweeps at once (two replicas
// whose lease overlapped) over the same silent devices notify each device
// once: the device row lock serialises them and the second reads the
// first's state.
func TestSweepSilenceConcurrentFiresOnce(t *testing.T) {
	t.Parallel()
	const devices = 40
	w := newClockWorld(t, devices)
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	w.exec(`UPDATE objects SET last_time = ? WHERE account_id = ?`, t0, w.acme)
	w.exec(`INSERT INTO events (account_id, name, type, active, checked_value) VALUES (?, 'silent', 'connection_no', true, '5')`, w.acme)
	for round := 1; round <= 3; round++ {
		now := t0.Add(time.Duration(round) * time.Hour)
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := w.store.SweepSilence(context.Background(), now)
				errs <- err
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var per []int
		w.scan(&per, `SELECT count(*) FROM notifications GROUP BY object_id`)
		if len(per) != devices {
			t.Fatalf("round %d: %d devices notified, want %d", round, len(per), devices)
		}
		for _, n := range per {
			if n != 1 {
				t.Fatalf("round %d: a device notified %d times for one silence", round, n)
			}
		}
	}
}

// TestSweepServiceDays: a notify_service_expire record with a days
// criterion yields service_soon when the day moves it into its threshold
// and service_expired when its interval has passed, each once however
// often the clock sweeps; service_states follows; a record without
// notify_service_expire and another tenant's record without it never
// notify.
func TestSweepServiceDays(t *testing.T) {
	t.Parallel()
	w := newClockWorld(t, 1)
	d0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	w.exec(`INSERT INTO services (account_id, imei, name, days, days_interval, days_last, days_left, days_left_num, notify_service_expire)
		VALUES (?, '350000000000001', 'Inspection', true, 30, ?, true, 7, true),
		       (?, '350000000000001', 'Quiet', true, 30, ?, true, 7, false),
		       (?, '990000000000001', 'Theirs', true, 30, ?, true, 7, false)`, w.acme, d0.Format(time.DateOnly), w.acme, d0.Format(time.DateOnly), w.other, d0.Format(time.DateOnly))
	sweep := func(day int, hour int) {
		t.Helper()
		if _, err := w.store.SweepServiceDays(context.Background(), d0.AddDate(0, 0, day).Add(time.Duration(hour)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, soon, expired int, state string) {
		t.Helper()
		if s, e := w.notifications("service_soon"), w.notifications("service_expired"); s != soon || e != expired {
			t.Fatalf("%s: %d service_soon and %d service_expired, want %d and %d", when, s, e, soon, expired)
		}
		var got []string
		w.scan(&got, `SELECT ss.state FROM service_states ss JOIN services s USING (service_id) WHERE s.name = 'Inspection'`)
		if state == "" && len(got) == 0 {
			return
		}
		if len(got) != 1 || got[0] != state {
			t.Fatalf("%s: service_states %v, want %q", when, got, state)
		}
	}
	sweep(10, 0)
	check("day 10", 0, 0, "")
	sweep(23, 1)
	check("day 23", 1, 0, "soon")
	sweep(23, 9)
	sweep(24, 0)
	check("days 23-24 again", 1, 0, "soon")
	sweep(30, 0)
	check("day 30", 1, 1, "expired")
	sweep(31, 0)
	sweep(60, 0)
	check("days 31-60", 1, 1, "expired")
	var n struct {
		ServiceID *int64 `bun:"service_id"`
		EventID   *int64 `bun:"event_id"`
		AccountID int64  `bun:"account_id"`
		Time      time.Time
	}
	w.scan(&n, `SELECT service_id, event_id, account_id, time FROM notifications WHERE type = 'service_expired'`)
	if n.ServiceID == nil || n.EventID != nil || n.AccountID != w.acme || !n.Time.Equal(d0.AddDate(0, 0, 30)) {
		t.Fatalf("service_expired %+v", n)
	}
}
