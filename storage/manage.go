package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/authsync"
)

// AuditEvents is the audit trail of management writes (GET /audit-events,
// docs/design.md §9), listed through the management scope: a row is visible
// when its target_account_id is an account the caller manages. It is not a
// tenant resource (Descriptors, Resources): no data.fleet.scope rule. The
// rows are written by package audit (audit.Write), inside the management
// write's transaction (manage).
var AuditEvents = Model[audit.Event]{scopedByAccounts[audit.Event]("target_account_id")}

// Actor is who makes a management write, as the audit row records it.
type Actor struct {
	AccountID int64
	TokenID   int64
	RequestID string
	TraceID   string
}

// ManagementWrite is one management write (docs/design.md §9): the accounts it
// acts on, which must be in the caller's management scope, and the change,
// which runs in the transaction and returns the audit event of what it
// did (action, target and changes; the actor is filled in).
type ManagementWrite struct {
	// Accounts are the ids that must be in the management scope; they are
	// locked for the transaction (FOR NO KEY UPDATE; FOR UPDATE for an
	// erase), in the lock order of every write (locks.go). One outside the
	// scope is ErrNotFound, whether it exists or not, and so is one
	// erased before the lock.
	Accounts []int64
	Actor    Actor
	// Change makes the change with tx and returns its audit event.
	Change func(ctx context.Context, tx *Store) (audit.Event, error)
	// More, when set, runs after Change in the same transaction and
	// returns the audit events of what the change did beyond its target
	// (the heirs a token's revocation revoked), stored with the same
	// actor after Change's.
	More func(ctx context.Context, tx *Store) ([]audit.Event, error)
	// deletes says that the write deletes Accounts (an erase): they are
	// locked FOR UPDATE.
	deletes bool
	// also are the other accounts the write locks with Accounts, in the
	// same order, without a scope check: the caller whose Idempotency-Key
	// it claims, the parent whose devices a grant names, the accounts of
	// a revoked token's heirs.
	also accountLocks
}

// locks is step 1 of w (locks.go): its accounts with their strengths.
func (w ManagementWrite) locks() accountLocks {
	l := forNoKeyUpdate
	if w.deletes {
		l = forUpdate
	}
	return w.also.with(l, w.Accounts...)
}

// ManageInTx runs w in one transaction: check its accounts against scope,
// the caller's management scope (policy.Engine.ManagementScope),
// make the change, store the audit row. Any failure rolls everything back,
// so a denied or failed write leaves no audit row, and a change is never
// stored without one. Errors are translated (Translate); ErrNotFound for
// an account outside the scope.
func (s *Store) ManageInTx(ctx context.Context, scope policy.Scope, w ManagementWrite) (audit.Event, error) {
	if _, err := s.compiledFor(scope, accountsScope); err != nil {
		return audit.Event{}, err
	}
	var ev audit.Event
	err := s.writeInTx(ctx, func(ctx context.Context, tx bun.Tx) (bool, error) {
		var err error
		ev, _, err = manage(ctx, s.on(tx), tx, scope, w, nil)
		return err == nil, err
	})
	if err != nil {
		return audit.Event{}, err
	}
	return ev, nil
}

// writeInTx runs write in one transaction and, when write reports that it
// wrote and the committed transaction changed what a principal is made of
// (principalChanged), waits until every replica's authentication cache
// has the change (awaitAuth) before it returns. Its errors are translated
// (Translate).
func (s *Store) writeInTx(ctx context.Context, write func(ctx context.Context, tx bun.Tx) (wrote bool, err error)) error {
	var changed bool
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		wrote, err := write(ctx, tx)
		if err != nil || !wrote {
			return err
		}
		changed, err = principalChanged(ctx, tx)
		return err
	})
	if err != nil {
		return Translate(err)
	}
	if changed {
		s.awaitAuth(ctx)
	}
	return nil
}

// principalChanged reports whether the transaction tx changed what a
// principal is made of: the triggers of migration 20261221000001 set
// fleet.auth_changed when they announce a change to the auth cache.
func principalChanged(ctx context.Context, tx bun.IDB) (bool, error) {
	var on bool
	err := tx.NewRaw("SELECT COALESCE(current_setting('fleet.auth_changed', true), '') = 'on'").Scan(ctx, &on)
	return on, err
}

// awaitAuth waits, after a committed change to a principal, until every
// replica's authentication cache has it or has stopped being consulted
// (authsync.AwaitAcks), whether or not the caller is still there: the change's
// answer never comes before that. Inside a caller's transaction (s.db is
// not the pool) nothing is committed yet, and the caller waits after its
// commit. The wait's trouble is logged by the caller's telemetry only:
// the change has happened, and the wait ended at its bound.
func (s *Store) awaitAuth(ctx context.Context) {
	if _, ok := s.db.(*bun.DB); !ok {
		return
	}
	res := authsync.AwaitAcks(context.WithoutCancel(ctx), s.db)
	res.Err = Translate(res.Err)
	attrs := []attribute.KeyValue{
		attribute.Int64("fleet.auth.ack.seq", res.Seq),
		attribute.Int64("fleet.auth.ack.wait_ms", res.Waited.Milliseconds()),
		attribute.Int("fleet.auth.ack.unacked", len(res.Unacked)),
	}
	if res.Err != nil {
		attrs = append(attrs, attribute.String("fleet.auth.ack.error", res.Err.Error()))
	}
	trace.SpanFromContext(ctx).AddEvent("auth.acks", trace.WithAttributes(attrs...))
}

// manage runs w inside the transaction tx (ManageInTx), whose Store is ts:
// its accounts checked against scope, then locked with the others it locks
// (step 1 of the lock order, locks.go); claim, when not nil, then claims
// the write's Idempotency-Key (step 2) and reports a replay, which ends
// the write there (replayed); then the change and the audit row. Its
// errors are untranslated; the caller's transaction rolls back on any of
// them.
func manage(ctx context.Context, ts *Store, tx bun.Tx, scope policy.Scope, w ManagementWrite, claim func() (bool, error)) (ev audit.Event, replayed bool, err error) {
	if len(w.Accounts) > 0 {
		ids := uniqueIDs(w.Accounts)
		q, err := ts.scopedSelect(scope, accountsScope, (*Account)(nil))
		if err != nil {
			return audit.Event{}, false, err
		}
		n, err := q.Where(accountsScope.col("id")+" = ANY(?)", pgdialect.Array(ids)).Count(ctx)
		if err != nil {
			return audit.Event{}, false, err
		}
		if n != int64(len(ids)) {
			return audit.Event{}, false, fmt.Errorf("%w: an account of the write is outside the management scope", ErrNotFound)
		}
	}
	if err := w.locks().lock(ctx, tx); err != nil {
		return audit.Event{}, false, err
	}
	if claim != nil {
		if replayed, err := claim(); err != nil || replayed {
			return audit.Event{}, replayed, err
		}
	}
	ev, err = w.Change(ctx, ts)
	if err != nil {
		return audit.Event{}, false, err
	}
	ev.ActorAccountID, ev.ActorTokenID = w.Actor.AccountID, w.Actor.TokenID
	ev.RequestID, ev.TraceID = w.Actor.RequestID, w.Actor.TraceID
	if err := audit.Write(ctx, tx, &ev); err != nil {
		return audit.Event{}, false, err
	}
	if w.More != nil {
		more, err := w.More(ctx, ts)
		if err != nil {
			return audit.Event{}, false, err
		}
		for i := range more {
			m := &more[i]
			m.ActorAccountID, m.ActorTokenID = w.Actor.AccountID, w.Actor.TokenID
			m.RequestID, m.TraceID = w.Actor.RequestID, w.Actor.TraceID
			if err := audit.Write(ctx, tx, m); err != nil {
				return audit.Event{}, false, err
			}
		}
	}
	return ev, false, nil
}

func uniqueIDs(ids []int64) []int64 {
	out := append([]int64(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	n := 0
	for i, id := range out {
		if i == 0 || id != out[n-1] {
			out[n] = id
			n++
		}
	}
	return out[:n]
}

// idempotentManage runs the management write w (scope check, locks,
// change, audit row: manage) in one transaction behind the idempotency key
// idem, nil for none. The key is claimed after the write's accounts are
// locked, the caller's among them (KEY SHARE: the key's row references
// it), so that the key's insert waits for nothing the write does not
// already hold (docs/locking.md). A key already claimed replays its stored
// response into *result and writes nothing; otherwise w's change fills
// *result, which is stored as the key's response. It reports whether the
// response was replayed, and returns the errors of manage and of the key
// (ErrIdempotencyKeyReused) passed through Translate.
func idempotentManage[T any](ctx context.Context, s *Store, scope policy.Scope, w ManagementWrite, idem *IdempotentRequest, result *T) (replayed bool, err error) {
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var claim func() (bool, error)
		if idem != nil {
			w.also = w.also.with(forKeyShare, idem.AccountID)
			claim = func() (bool, error) {
				raw, claimed, err := claimKey(ctx, tx, *idem)
				if err != nil || claimed {
					return false, err
				}
				if err := json.Unmarshal(raw, result); err != nil {
					return false, fmt.Errorf("idempotency key %q: stored response: %w", idem.Key, err)
				}
				return true, nil
			}
		}
		var err error
		if _, replayed, err = manage(ctx, s.on(tx), tx, scope, w, claim); err != nil || replayed || idem == nil {
			return err
		}
		return storeIdempotentResponse(ctx, tx, *idem, *result)
	})
	return replayed, Translate(err)
}
