package storage

import (
	"context"
	"time"
)

// InsertNotificationOf inserts, through insertNotifications (the one
// statement the ingest, the clock and the service states use, which also
// queues the webhook deliveries), a notification of type typ for the
// device imei, owned by the device's account, in its own transaction. It
// returns the notification's id.
func (s *Store) InsertNotificationOf(ctx context.Context, imei, typ string) (int64, error) {
	var o struct {
		ID        int64 `bun:"id"`
		AccountID int64 `bun:"account_id"`
	}
	if err := s.db.NewRaw(`SELECT id, account_id FROM objects WHERE imei = ?`, imei).Scan(ctx, &o); err != nil {
		return 0, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	row := notificationRow{AccountID: o.AccountID, Type: typ, IMEI: imei, ObjectID: o.ID, Time: time.Now(), Value: "1", Message: "test " + typ}
	if _, err := insertNotifications(ctx, tx, []notificationRow{row}); err != nil {
		return 0, err
	}
	var id int64
	if err := tx.NewRaw(`SELECT max(id) FROM notifications`).Scan(ctx, &id); err != nil {
		return 0, err
	}
	return id, tx.Commit()
}

// ClaimSQL is the claim's statement (args: the webhook ids excluded,
// whether only retries, whether only healthy endpoints, the slots), for
// its plan.
const ClaimSQL = claimSQL
