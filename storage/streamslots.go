package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// OpenStreamSlot takes one of the account's at most limit slots of open
// notification streams, across every replica (notification_streams, a
// row per open stream with a lease): under a transaction-scoped advisory
// lock of the account's streams (no row lock: the stream write is in no
// other write's lock order, docs/locking.md), it forgets the account's
// slots whose lease has ended, counts the others and, when fewer than
// limit, inserts one leased for lease. It returns the slot's id, or 0
// when the account has limit open streams already.
func (s *Store) OpenStreamSlot(ctx context.Context, accountID int64, limit int, lease time.Duration) (int64, error) {
	var id int64
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('fleet_streams:' || ?::bigint, 0))`, accountID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM notification_streams WHERE account_id = ? AND lease_until < now()`, accountID); err != nil {
			return err
		}
		var open int
		if err := tx.NewRaw(`SELECT count(*) FROM notification_streams WHERE account_id = ?`, accountID).Scan(ctx, &open); err != nil {
			return err
		}
		if open >= limit {
			return nil
		}
		return tx.NewRaw(`INSERT INTO notification_streams (account_id, lease_until)
			VALUES (?, now() + ? * interval '1 microsecond') RETURNING id`, accountID, lease.Microseconds()).Scan(ctx, &id)
	})
	if err != nil {
		return 0, translateOwn(err)
	}
	return id, nil
}

// RenewStreamSlot extends the lease of the slot id to lease from now. It
// returns false when the slot is gone (its lease ended and another open
// took its place, or the account was erased): the stream must end.
func (s *Store) RenewStreamSlot(ctx context.Context, id int64, lease time.Duration) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE notification_streams SET lease_until = now() + ? * interval '1 microsecond' WHERE id = ?`,
		lease.Microseconds(), id)
	if err != nil {
		return false, translateOwn(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, translateOwn(err)
	}
	return n == 1, nil
}

// CloseStreamSlot frees the slot id.
func (s *Store) CloseStreamSlot(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM notification_streams WHERE id = ?`, id)
	return translateOwn(err)
}
