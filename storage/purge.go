package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Purging what is no longer of use (docs/decisions.md, "Idempotency keys
// expire" and "Dead tokens are purged"): idempotency keys older than
// IdempotencyKeyTTL (already as good as absent), and tokens revoked or
// expired longer than a retention ago. Every replica purges on an
// interval (fleetapi serve); they skip each other's rows (FOR UPDATE SKIP
// LOCKED) instead of waiting for them.

// Defaults of the purge (fleetapi serve: FLEET_PURGE_INTERVAL,
// FLEET_TOKEN_RETENTION).
const (
	DefaultPurgeInterval  = 10 * time.Minute
	DefaultTokenRetention = 30 * 24 * time.Hour
)

// purgeBatch bounds the rows one statement of the purge deletes, so that
// each holds its locks briefly.
const purgeBatch = 1000

// Purged counts what one Purge deleted.
type Purged struct {
	// IdempotencyKeys are the expired keys deleted, the responses naming
	// a purged token included.
	IdempotencyKeys int64
	// Tokens are the dead tokens deleted.
	Tokens int64
}

// Purge deletes the idempotency keys older than IdempotencyKeyTTL and,
// with a tokenRetention above 0, the tokens revoked or expired for longer
// than tokenRetention, with the stored responses that name them. A token
// that minted a token still kept is kept too (lineage: a kept token's
// parent_token_id names a row), so a chain goes from its youngest
// generation up, each in a statement of its own. The audit trail keeps
// the purged tokens' events (their target_id then names no row, as after
// an erase). It works in batches of purgeBatch rows, each its own
// transaction, until nothing is left to purge or ctx ends, and returns
// what it deleted; ErrUnavailable when the database cannot be reached.
func (s *Store) Purge(ctx context.Context, tokenRetention time.Duration) (Purged, error) {
	var out Purged
	for {
		n, err := affected(s.db.NewDelete().TableExpr("idempotency_keys AS ik").
			Where(`(ik.account_id, ik.key) IN (SELECT e.account_id, e.key FROM idempotency_keys AS e
				WHERE e.created_at <= now() - ? * interval '1 microsecond' ORDER BY e.created_at LIMIT ? FOR UPDATE SKIP LOCKED)`,
				IdempotencyKeyTTL.Microseconds(), purgeBatch).Exec(ctx))
		if err != nil {
			return out, translateOwn(err)
		}
		out.IdempotencyKeys += n
		if n < purgeBatch {
			break
		}
	}
	if tokenRetention <= 0 {
		return out, nil
	}
	for {
		var gone []int64
		err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			gone = nil
			if err := tx.NewDelete().TableExpr("tokens AS t").
				Where(`t.id IN (SELECT d.id FROM tokens AS d
					WHERE LEAST(d.revoked_at, d.expires_at) <= now() - ? * interval '1 microsecond'
					AND NOT EXISTS (SELECT 1 FROM tokens AS c WHERE c.parent_token_id = d.id)
					ORDER BY d.id LIMIT ? FOR UPDATE SKIP LOCKED)`, tokenRetention.Microseconds(), purgeBatch).
				Returning("t.id").Scan(ctx, &gone); err != nil {
				return err
			}
			if len(gone) == 0 {
				return nil
			}
			n, err := affected(tx.NewDelete().TableExpr("idempotency_keys").
				Where("subject = 'tokens' AND subject_id = ANY(?)", pgdialect.Array(gone)).Exec(ctx))
			out.IdempotencyKeys += n
			return err
		})
		if err != nil {
			return out, translateOwn(err)
		}
		out.Tokens += int64(len(gone))
		if len(gone) == 0 {
			return out, nil
		}
	}
}
