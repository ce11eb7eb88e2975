package storage

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// The writes of what a fleet configures (docs/design.md §15): event rules,
// service records and reports, created, changed and deleted through the
// API. One opening drives the three (configWrites): the row's owner in
// the caller's management scope, locked FOR NO KEY UPDATE (step 1 of
// docs/locking.md), the Idempotency-Key of a create (step 2), the devices
// the row names, which must be the owner's (step 3: a service's one
// device FOR NO KEY UPDATE, the lists of rules and reports read under the
// owner's lock, which every move of a device needs too), the row (step 4),
// the new row inside the caller's row scope, and the audit row, all in
// one transaction. A resource declares only what differs.

// configWrites declares the writes of one resource of rows T.
type configWrites[T any] struct {
	model Model[T]
	// create, update and remove are the audit actions.
	create, update, remove string
	// quota, when not empty, is counted by a create.
	quota limits.Quota
	// id and owner address the row's id and account_id.
	id, owner func(*T) *int64
	// devices are the IMEIs the row names (every one the owner's).
	devices func(*T) []string
	// zones, when not nil, are the zone ids the row names, in the field
	// zoneField: every one a zone of the owner (ownedZones).
	zones     func(*T) []string
	zoneField string
	// lockDevices: the devices are locked FOR NO KEY UPDATE (step 3), by
	// id: the row's writes change what the ingest reads under that lock.
	lockDevices bool
	// audit is the row's fields as the audit trail records them.
	audit func(T) map[string]any
	// after, when not nil, runs in the transaction after the row's insert,
	// update or delete (old nil on a create, new nil on a delete), with the
	// ids of the devices old and new name.
	after func(ctx context.Context, tx *Store, old, new *T, devices []int64) error
}

// ownedDevices returns the ids of the devices imeis of account (locked FOR
// NO KEY UPDATE when lock), in id order, or an InvalidFields naming field
// for the first that is not the account's (unknown or another account's
// alike: the answer says nothing of other tenants).
func ownedDevices(ctx context.Context, db bun.IDB, account int64, imeis []string, field string, lock bool) ([]int64, error) {
	ids, found, err := deviceIDs(ctx, db, account, imeis, lock)
	if err != nil {
		return nil, err
	}
	for i, imei := range imeis {
		if !found[imei] {
			// The entry, not the IMEI: the answer is the same byte for byte
			// for an unknown device and another tenant's.
			reason := "not a device of the account"
			if len(imeis) > 1 {
				reason = fmt.Sprintf("entry %d: %s", i, reason)
			}
			return nil, InvalidFields{field: reason}
		}
	}
	return ids, nil
}

// ownedZones checks that every id of ids names a zone of account, and
// locks those zones FOR KEY SHARE, by id, so that a concurrent DELETE
// /zones/{id} cannot remove one before the write commits (step 4 of
// docs/locking.md: a row of an account the write holds). An id that is
// not a zone of the account (not a canonical id, absent, deleted, another
// tenant's alike: no existence oracle) is an InvalidFields naming field.
func ownedZones(ctx context.Context, db bun.IDB, account int64, ids []string, field string) error {
	if len(ids) == 0 {
		return nil
	}
	want := make([]int64, 0, len(ids))
	for _, z := range ids {
		if n, err := strconv.ParseInt(z, 10, 64); err == nil && n > 0 && strconv.FormatInt(n, 10) == z {
			want = append(want, n)
		}
	}
	var found []int64
	if len(want) > 0 {
		if err := db.NewRaw(`SELECT id FROM zones WHERE account_id = ? AND id = ANY(?) ORDER BY id FOR KEY SHARE`,
			account, pgdialect.Array(want)).Scan(ctx, &found); err != nil {
			return err
		}
	}
	for i, z := range ids {
		n, err := strconv.ParseInt(z, 10, 64)
		if err == nil && strconv.FormatInt(n, 10) == z && slices.Contains(found, n) {
			continue
		}
		reason := "not a zone of the account"
		if len(ids) > 1 {
			reason = fmt.Sprintf("entry %d: %s", i, reason)
		}
		return InvalidFields{field: reason}
	}
	return nil
}

// zonesOf are the zone ids row names (none when w's rows name none).
func (w configWrites[T]) zonesOf(row *T) []string {
	if w.zones == nil {
		return nil
	}
	return w.zones(row)
}

// deviceIDs reads the devices imeis of account (FOR NO KEY UPDATE when
// lock), in id order: their ids and the IMEIs found.
func deviceIDs(ctx context.Context, db bun.IDB, account int64, imeis []string, lock bool) ([]int64, map[string]bool, error) {
	if len(imeis) == 0 {
		return nil, nil, nil
	}
	var rows []struct {
		ID   int64  `bun:"id"`
		IMEI string `bun:"imei"`
	}
	q := `SELECT id, imei FROM objects WHERE account_id = ? AND imei = ANY(?) ORDER BY id`
	if lock {
		q += " FOR NO KEY UPDATE"
	}
	if err := db.NewRaw(q, account, pgdialect.Array(imeis)).Scan(ctx, &rows); err != nil {
		return nil, nil, err
	}
	found := make(map[string]bool, len(rows))
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		found[r.IMEI] = true
		ids = append(ids, r.ID)
	}
	return ids, found, nil
}

// ownerIn returns the account of row id of w's resource when the row is in
// scope (the caller's row scope), read on the primary; ErrNotFound
// otherwise, the same for a row that does not exist and another tenant's.
func (w configWrites[T]) ownerIn(ctx context.Context, s *Store, scope policy.Scope, id int64) (int64, error) {
	var row T
	q, err := s.scopedSelect(scope, w.model.Descriptor, &row)
	if err != nil {
		return 0, err
	}
	if err := q.Where(w.model.col(w.model.id.Name)+" = ?", id).Limit(1).Scan(ctx); err != nil {
		return 0, translateOwn(err)
	}
	return *w.owner(&row), nil
}

// inScope checks that the row id, written in this transaction, is inside
// scope: a write never leaves a row its caller could not read.
func (w configWrites[T]) inScope(ctx context.Context, tx *Store, scope policy.Scope, id int64) error {
	q, err := tx.scopedSelect(scope, w.model.Descriptor, (*T)(nil))
	if err != nil {
		return err
	}
	n, err := q.Where(w.model.col(w.model.id.Name)+" = ?", id).Count(ctx)
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%w: a row of %s of account %d is outside the caller's scope", policy.ErrScope, w.model.table, id)
	}
	return nil
}

// createRow stores row for its owner (docs/design.md §15) with its audit
// row, under the Idempotency-Key idem (nil: none). mscope is the caller's
// management scope, which must hold the owner (ErrNotFound otherwise);
// scope its row scope, which must admit the new row (policy.ErrScope).
// Errors: ErrNotFound, ErrInvalid (an InvalidFields for a device that is
// not the owner's), ErrConflict, a *limits.QuotaError,
// ErrIdempotencyKeyReused, ErrUnavailable.
func (w configWrites[T]) createRow(ctx context.Context, s *Store, scope, mscope policy.Scope, actor Actor, row T, idem *IdempotentRequest) (created T, replayed bool, err error) {
	if _, err := s.compiledFor(scope, w.model.Descriptor); err != nil {
		return created, false, err
	}
	*w.id(&row) = 0
	owner := *w.owner(&row)
	mw := ManagementWrite{Accounts: []int64{owner}, Actor: actor, Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
		if w.quota != "" {
			if err := s.checkQuota(ctx, tx.db, owner, w.quota); err != nil {
				return audit.Event{}, err
			}
		}
		devices, err := ownedDevices(ctx, tx.db, owner, w.devices(&row), "imei", w.lockDevices)
		if err != nil {
			return audit.Event{}, err
		}
		if err := ownedZones(ctx, tx.db, owner, w.zonesOf(&row), w.zoneField); err != nil {
			return audit.Event{}, err
		}
		if _, err := tx.db.NewInsert().Model(&row).Returning("*").Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		if err := w.inScope(ctx, tx, scope, *w.id(&row)); err != nil {
			return audit.Event{}, err
		}
		if w.after != nil {
			if err := w.after(ctx, tx, nil, &row, devices); err != nil {
				return audit.Event{}, err
			}
		}
		created = row
		return audit.New(w.create, owner, *w.id(&row), nil, w.audit(row))
	}}
	if replayed, err = idempotentManage(ctx, s, mscope, mw, idem, &created); err != nil {
		var zero T
		return zero, false, err
	}
	*w.owner(&created) = owner
	return created, replayed, nil
}

// changeRow changes the row id in scope (ErrNotFound outside it, like a
// missing id) with apply, which receives the current row and returns the
// new one (its error ends the write), and the audit action (update, or
// another of the resource's: service.done). Errors: those of createRow.
func (w configWrites[T]) changeRow(ctx context.Context, s *Store, scope, mscope policy.Scope, actor Actor, id int64, action string, apply func(ctx context.Context, tx *Store, cur T) (T, error)) (T, error) {
	var out T
	owner, err := w.ownerIn(ctx, s, scope, id)
	if err != nil {
		return out, err
	}
	_, err = s.ManageInTx(ctx, mscope, ManagementWrite{Accounts: []int64{owner}, Actor: actor, Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
		// Under the owner's lock the row holds still (its every writer
		// holds the owner): read first, locked after its devices (steps 3
		// and 4 of docs/locking.md).
		cur, err := w.locked(ctx, tx, owner, id, "")
		if err != nil {
			return audit.Event{}, err
		}
		next, err := apply(ctx, tx, cur)
		if err != nil {
			return audit.Event{}, err
		}
		*w.id(&next), *w.owner(&next) = id, owner
		if _, err := ownedDevices(ctx, tx.db, owner, w.devices(&next), "imei", false); err != nil {
			return audit.Event{}, err
		}
		// The devices of the row before and after (step 3).
		names := slices.Concat(w.devices(&cur), w.devices(&next))
		slices.Sort(names)
		devices, _, err := deviceIDs(ctx, tx.db, owner, slices.Compact(names), w.lockDevices)
		if err != nil {
			return audit.Event{}, err
		}
		// The zones the new row names, every one the owner's, the whole
		// list (as its devices): a row imported with a dangling id is
		// changed only with its zones set right.
		if err := ownedZones(ctx, tx.db, owner, w.zonesOf(&next), w.zoneField); err != nil {
			return audit.Event{}, err
		}
		if _, err := w.locked(ctx, tx, owner, id, "NO KEY UPDATE"); err != nil {
			return audit.Event{}, err
		}
		if _, err := tx.db.NewUpdate().Model(&next).WherePK().ExcludeColumn(w.model.id.Name, "account_id").Returning("*").Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		if err := w.inScope(ctx, tx, scope, id); err != nil {
			return audit.Event{}, err
		}
		if w.after != nil {
			if err := w.after(ctx, tx, &cur, &next, devices); err != nil {
				return audit.Event{}, err
			}
		}
		out = next
		return audit.New(action, owner, id, w.audit(cur), w.audit(next))
	}})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// deleteRow deletes the row id in scope (ErrNotFound outside it, like a
// missing id) with its audit row, whose changes hold the row's fields
// before and null after.
func (w configWrites[T]) deleteRow(ctx context.Context, s *Store, scope, mscope policy.Scope, actor Actor, id int64) error {
	owner, err := w.ownerIn(ctx, s, scope, id)
	if err != nil {
		return err
	}
	_, err = s.ManageInTx(ctx, mscope, ManagementWrite{Accounts: []int64{owner}, Actor: actor, Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
		cur, err := w.locked(ctx, tx, owner, id, "")
		if err != nil {
			return audit.Event{}, err
		}
		devices, _, err := deviceIDs(ctx, tx.db, owner, w.devices(&cur), w.lockDevices)
		if err != nil {
			return audit.Event{}, err
		}
		if _, err := w.locked(ctx, tx, owner, id, "UPDATE"); err != nil {
			return audit.Event{}, err
		}
		if _, err := tx.db.NewDelete().Model(&cur).WherePK().Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		if w.after != nil {
			if err := w.after(ctx, tx, &cur, nil, devices); err != nil {
				return audit.Event{}, err
			}
		}
		changes := audit.Changes{}
		for f, v := range w.audit(cur) {
			changes[f] = audit.Change{Before: v}
		}
		return audit.Event{Action: w.remove, TargetAccountID: owner, TargetID: id, Changes: changes}, nil
	}})
	return err
}

// locked reads the row id of owner in tx with the row lock lock (none when
// empty); ErrNotFound when it is gone (deleted, or its owner changed,
// meanwhile).
func (w configWrites[T]) locked(ctx context.Context, tx *Store, owner, id int64, lock string) (T, error) {
	var cur T
	q := tx.db.NewSelect().Model(&cur).Where(w.model.col(w.model.id.Name)+" = ?", id).
		Where(w.model.col("account_id")+" = ?", owner)
	if lock != "" {
		q = q.For(lock)
	}
	err := q.Scan(ctx)
	if err != nil {
		return cur, translateOwn(err)
	}
	return cur, nil
}
