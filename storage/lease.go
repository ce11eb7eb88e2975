package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"
)

// TryLease takes or renews the lease name for holder for ttl (fleet_leases:
// a job that runs on exactly one replica at a time: the positions
// maintenance, the clock's rules). It is one statement: the lease is taken
// when nobody holds it, when its holder's lease ran out, or renewed when
// holder holds it already; it returns false while another holder's lease
// runs. holder names the replica (a random id per process); ttl is longer
// than the job's period, so that a live holder renews it before it runs
// out and a dead one's lease passes to another replica after ttl. Times
// are the database's clock (now()), the same for every replica.
func TryLease(ctx context.Context, db bun.IDB, name, holder string, ttl time.Duration) (bool, error) {
	var ok bool
	err := db.NewRaw(`INSERT INTO fleet_leases (name, holder, lease_until) VALUES (?, ?, now() + make_interval(secs => ?))
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, lease_until = EXCLUDED.lease_until
WHERE fleet_leases.lease_until < now() OR fleet_leases.holder = EXCLUDED.holder
RETURNING true`, name, holder, ttl.Seconds()).Scan(ctx, &ok)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, Translate(err)
	}
	return ok, nil
}
