package storage

import (
	"context"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// Leases (fleet_leases): a named background job runs on one replica at a
// time, the holder of its lease. A lease is held until lease_until; its
// holder renews it before then, another replica takes it only once it has
// expired (or was released). A lease is an economy, not a guarantee: a
// holder paused past its lease (a long GC, a frozen VM) may still be
// running its job when another replica takes over, so every job under a
// lease must be safe run twice at once (the clock's rules: the device
// row lock and the rule state make each notification exactly once).

// TryLease takes or renews the lease name for holder until ttl from the
// database's clock, and reports whether holder holds it now: true when
// the lease was free, expired or already holder's; false while another
// holder's lease runs. One statement: two replicas asking at once are
// serialised by the row (or the primary key of its first insert).
func TryLease(ctx context.Context, db bun.IDB, name, holder string, ttl time.Duration) (held bool, err error) {
	if name == "" || holder == "" || ttl <= 0 {
		return false, errors.New("storage: TryLease needs a name, a holder and a positive ttl")
	}
	var got []string
	err = db.NewRaw(`INSERT INTO fleet_leases AS l (name, holder, lease_until)
		VALUES (?, ?, clock_timestamp() + ? * interval '1 microsecond')
		ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until
		WHERE l.lease_until < clock_timestamp() OR l.holder = EXCLUDED.holder
		RETURNING l.holder`, name, holder, ttl.Microseconds()).Scan(ctx, &got)
	if err != nil {
		return false, translateOwn(err)
	}
	return len(got) == 1 && got[0] == holder, nil
}

// ReleaseLease gives up holder's lease name at once (a graceful stop), so
// that another replica need not wait for it to expire. It does nothing
// when holder does not hold it.
func ReleaseLease(ctx context.Context, db bun.IDB, name, holder string) error {
	_, err := db.NewRaw(`DELETE FROM fleet_leases WHERE name = ? AND holder = ?`, name, holder).Exec(ctx)
	return translateOwn(err)
}

// TryLease is the function TryLease over the store's primary.
func (s *Store) TryLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	return TryLease(ctx, s.db, name, holder, ttl)
}

// ReleaseLease is the function ReleaseLease over the store's primary.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	return ReleaseLease(ctx, s.db, name, holder)
}
