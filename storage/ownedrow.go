package storage

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
)

// writeAudit stores ev with the actor's fields (audit.Write).
func writeAudit(ctx context.Context, db bun.IDB, actor Actor, ev *audit.Event) error {
	ev.ActorAccountID, ev.ActorTokenID = actor.AccountID, actor.TokenID
	ev.RequestID, ev.TraceID = actor.RequestID, actor.TraceID
	return audit.Write(ctx, db, ev)
}

// rowIn reads the row id of m inside scope with s's database, locked with
// lock when not empty ("NO KEY UPDATE"); ErrNotFound when the scope does
// not admit it or it does not exist.
func rowIn[T any](ctx context.Context, s *Store, m Model[T], scope policy.Scope, id int64, lock string) (T, error) {
	var row, zero T
	q, err := s.scopedSelect(scope, m.Descriptor, &row)
	if err != nil {
		return zero, err
	}
	q = q.Where(m.col(m.id.Name)+" = ?", id).Limit(1)
	if lock != "" {
		q = q.For(lock + " OF " + m.alias)
	}
	if err := q.Scan(ctx); err != nil {
		return zero, translateOwn(err)
	}
	return row, nil
}

// changeOwned runs change on the row id of m inside scope in one
// transaction: the row read in scope (ErrNotFound outside it), its
// account (accountOf) locked FOR NO KEY UPDATE (step 1 of the lock
// order), the row read again locked FOR NO KEY UPDATE (ErrNotFound when it
// went meanwhile), then change, whose audit event (when its Action is set)
// is stored with the actor. Errors are translated. The webhooks and the
// zones change through it.
func changeOwned[T any](ctx context.Context, s *Store, m Model[T], scope policy.Scope, actor Actor, id int64, accountOf func(T) int64,
	change func(ctx context.Context, tx bun.Tx, row T) (audit.Event, error)) error {
	if _, err := s.compiledFor(scope, m.Descriptor); err != nil {
		return err
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ts := s.on(tx)
		row, err := rowIn(ctx, ts, m, scope, id, "")
		if err != nil {
			return err
		}
		if err := (accountLocks{}.with(forNoKeyUpdate, accountOf(row))).lock(ctx, tx); err != nil {
			return err
		}
		if row, err = rowIn(ctx, ts, m, scope, id, "NO KEY UPDATE"); err != nil {
			return err
		}
		ev, err := change(ctx, tx, row)
		if err != nil || ev.Action == "" {
			return err
		}
		return writeAudit(ctx, tx, actor, &ev)
	})
	return Translate(err)
}
