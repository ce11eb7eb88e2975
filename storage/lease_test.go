package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// TestTryLease: one holder at a time; the holder renews; another takes
// the lease once it has run out.
func TestTryLease(t *testing.T) {
	db := storagetest.New(t)
	ctx := context.Background()
	try := func(holder string, ttl time.Duration) bool {
		t.Helper()
		ok, err := storage.TryLease(ctx, db.DB, "job", holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !try("a", time.Hour) {
		t.Fatal("a free lease was not taken")
	}
	if try("b", time.Hour) {
		t.Fatal("b took a's running lease")
	}
	if !try("a", time.Hour) {
		t.Fatal("a could not renew its lease")
	}
	if _, err := db.ExecContext(ctx, "UPDATE fleet_leases SET lease_until = now() - interval '1 second' WHERE name = 'job'"); err != nil {
		t.Fatal(err)
	}
	if !try("b", time.Hour) {
		t.Fatal("b did not take a's lease that ran out")
	}
	if try("a", time.Hour) {
		t.Fatal("a took b's running lease back")
	}
	ok, err := storage.TryLease(ctx, db.DB, "another-job", "a", time.Hour)
	if err != nil || !ok {
		t.Fatalf("a lease of another name: %t %v", ok, err)
	}
}

// TestMaintainPositions: the lease holder makes the partitions ahead,
// drops those past the retention and deletes old notifications; another
// replica does nothing meanwhile.
func TestMaintainPositions(t *testing.T) {
	db := storagetest.New(t)
	ctx := context.Background()
	s := storage.NewStore(db.DB)
	now := time.Now().UTC()
	old := now.AddDate(0, 0, -40)
	if _, err := db.ExecContext(ctx, "SELECT ensure_positions_partitions(?::date, ?::date)", old.Format(time.DateOnly), old.Format(time.DateOnly)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO accounts (username, type) VALUES ('zq-maint', 'user')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO notifications (account_id, type, imei, object_id, time, created_at)
		SELECT id, 'overspeed', '1', 1, now(), now() - interval '40 days' FROM accounts WHERE username = 'zq-maint'
		UNION ALL SELECT id, 'overspeed', '1', 1, now(), now() FROM accounts WHERE username = 'zq-maint'`); err != nil {
		t.Fatal(err)
	}
	m, err := s.MaintainPositions(ctx, "r1", time.Hour, 30*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Ran || m.Dropped < 1 || m.NotificationsDeleted != 1 {
		t.Fatalf("maintenance %+v, want run, the old partition dropped, one notification deleted", m)
	}
	exists := func(day time.Time) bool {
		var ok bool
		if err := db.NewRaw("SELECT to_regclass(?) IS NOT NULL", "positions_"+day.Format("20060102")).Scan(ctx, &ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if exists(old) || !exists(now.AddDate(0, 0, 2)) || !exists(now.AddDate(0, 0, -30)) {
		t.Fatalf("partitions: 40 days ago %t, in 2 days %t, 30 days ago %t", exists(old), exists(now.AddDate(0, 0, 2)), exists(now.AddDate(0, 0, -30)))
	}
	if other, err := s.MaintainPositions(ctx, "r2", time.Hour, 30*24*time.Hour, now); err != nil || other.Ran {
		t.Fatalf("a second replica ran the maintenance: %+v %v", other, err)
	}
}
