package storage

import (
	"context"
	"time"
)

// PositionsLease is the fleet_leases name of the positions maintenance.
const PositionsLease = "positions-maintenance"

// notificationsPurgeBatch is how many notifications one delete removes:
// short statements, so that the maintenance never holds many rows' locks.
const notificationsPurgeBatch = 5000

// Maintained is what one MaintainPositions run did.
type Maintained struct {
	// Ran is false when another replica holds the lease.
	Ran                  bool
	Made, Dropped        int
	NotificationsDeleted int64
}

// MaintainPositions is the positions maintenance (docs/design.md §14),
// run by the holder of the lease PositionsLease only (holder names this
// replica; ttl outlives the run's period): it makes the daily partitions
// from today − retention − 1 to today + 2 (UTC), drops those wholly older
// than today − retention, and deletes the notifications older than the
// retention, in batches.
func (s *Store) MaintainPositions(ctx context.Context, holder string, ttl, retention time.Duration, now time.Time) (Maintained, error) {
	var m Maintained
	ok, err := TryLease(ctx, s.db, PositionsLease, holder, ttl)
	if err != nil || !ok {
		return m, err
	}
	m.Ran = true
	today := now.UTC().Truncate(24 * time.Hour)
	days := int(retention / (24 * time.Hour))
	first := today.AddDate(0, 0, -days-1).Format(time.DateOnly)
	last := today.AddDate(0, 0, 2).Format(time.DateOnly)
	if err := s.db.NewRaw("SELECT ensure_positions_partitions(?::date, ?::date)", first, last).Scan(ctx, &m.Made); err != nil {
		return m, Translate(err)
	}
	cutoff := today.AddDate(0, 0, -days).Format(time.DateOnly)
	if err := s.db.NewRaw("SELECT drop_positions_partitions(?::date)", cutoff).Scan(ctx, &m.Dropped); err != nil {
		return m, Translate(err)
	}
	before := now.Add(-retention)
	for {
		res, err := s.db.NewRaw(`DELETE FROM notifications WHERE id IN
  (SELECT id FROM notifications WHERE created_at < ? ORDER BY id LIMIT ?)`, before, notificationsPurgeBatch).Exec(ctx)
		if err != nil {
			return m, Translate(err)
		}
		n, _ := res.RowsAffected()
		m.NotificationsDeleted += n
		if n < notificationsPurgeBatch {
			return m, nil
		}
	}
}
