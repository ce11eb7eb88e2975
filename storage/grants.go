package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
	"github.com/fleetapi/fleetapi/storage/limits"
)

// ErrDeviceNotOwned: a device of a grants.replace is not owned by the
// subaccount's parent when the transaction runs (the policy has said
// device_not_owned on the facts read before it).
var ErrDeviceNotOwned = errors.New("device not owned by the parent")

// grantedTo is the condition on objects ("o") of the devices granted to
// the subaccount bound to its placeholder.
var grantedTo = Objects.col("imei") + ` IN (SELECT "grant"."imei" FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = ?)`

// inScope returns ErrNotFound unless the account id is in scope, the
// caller's management scope.
func (s *Store) inScope(ctx context.Context, scope policy.Scope, id int64) error {
	ids, err := s.ManagedAccounts(ctx, scope, id)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return fmt.Errorf("%w: account %d is outside the management scope", ErrNotFound, id)
	}
	return nil
}

// GrantedObjects returns the page of the devices granted to the
// subaccount id (GET /accounts/{id}/objects, docs/design.md §9) that req selects.
// The account must be in scope, the caller's management scope
// (ErrNotFound otherwise); the api has checked that it is a subaccount.
func (s *Store) GrantedObjects(ctx context.Context, scope policy.Scope, id int64, req ListRequest) (Page[Object], error) {
	if err := req.check(); err != nil {
		return Page[Object]{}, err
	}
	if err := s.inScope(ctx, scope, id); err != nil {
		return Page[Object]{}, err
	}
	return listPage[Object](ctx, Objects.Descriptor, req, listSource{start: func(model any, _ bool) (*bun.SelectQuery, error) {
		return s.db.NewSelect().Model(model).Where(grantedTo, id), nil
	}})
}

// ParentDevices returns, among imei, the devices owned by the parent (the
// manager_id) of the account id, sorted: the target's owned_imei of a
// grants.replace decision (policy.TargetInput). The account must be in
// scope (ErrNotFound otherwise). An unknown device and another account's
// device are both simply absent from the answer.
func (s *Store) ParentDevices(ctx context.Context, scope policy.Scope, id int64, imei []string) ([]string, error) {
	if err := s.inScope(ctx, scope, id); err != nil {
		return nil, err
	}
	return parentDevices(ctx, s.db, id, imei)
}

func parentDevices(ctx context.Context, db bun.IDB, id int64, imei []string) ([]string, error) {
	out := []string{}
	if len(imei) == 0 {
		return out, nil
	}
	err := db.NewSelect().TableExpr(`"objects" AS "o"`).Column("o.imei").
		Join(`JOIN "accounts" AS "a" ON "a"."manager_id" = "o"."account_id"`).
		Where(`"a"."id" = ?`, id).Where(`"o"."imei" = ANY(?)`, pgdialect.Array(imei)).
		OrderExpr(`"o"."imei"`).Scan(ctx, &out)
	if err != nil {
		return nil, Translate(err)
	}
	return out, nil
}

// ReplaceGrants replaces the devices granted to the subaccount id with
// imei (grants.replace, docs/design.md §9) in one transaction with its audit row,
// whose changes hold the sorted imei lists before and after (none when
// they are equal). It returns the granted devices, ordered by id. The
// account must be in scope (ErrNotFound otherwise); the policy has already
// allowed the grants (every device owned by the parent). A device that is
// no longer owned by the parent when the transaction runs is
// ErrDeviceNotOwned and nothing is stored.
func (s *Store) ReplaceGrants(ctx context.Context, scope policy.Scope, actor Actor, id int64, imei []string) ([]Object, error) {
	after := slices.Clone(imei)
	slices.Sort(after)
	after = slices.Compact(after)
	if after == nil {
		after = []string{}
	}
	// The parent owns the devices granted: it is locked too (NO KEY
	// UPDATE, as a move of its devices locks it), so that no device
	// changes hands between the check of its owner and the grant's insert
	// (docs/locking.md). An account's parent never changes.
	var parent []int64
	if err := s.db.NewSelect().Model((*Account)(nil)).Column("manager_id").Where(accountsScope.col("id")+" = ?", id).
		Where(accountsScope.col("manager_id")+" IS NOT NULL").Scan(ctx, &parent); err != nil {
		return nil, translateOwn(err)
	}
	var granted []Object
	_, err := s.ManageInTx(ctx, scope, ManagementWrite{Accounts: []int64{id}, Actor: actor,
		also: accountLocks{}.with(forNoKeyUpdate, parent...),
		Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
			owned, err := parentDevices(ctx, tx.db, id, after)
			if err != nil {
				return audit.Event{}, err
			}
			if len(owned) != len(after) {
				return audit.Event{}, ErrDeviceNotOwned
			}
			before := []string{}
			if err := tx.db.NewSelect().Model((*ObjectGrant)(nil)).Column("imei").Where("subaccount_id = ?", id).
				OrderExpr("imei").Scan(ctx, &before); err != nil {
				return audit.Event{}, err
			}
			if _, err := tx.db.NewDelete().Model((*ObjectGrant)(nil)).Where("subaccount_id = ?", id).Exec(ctx); err != nil {
				return audit.Event{}, err
			}
			if len(after) > 0 {
				rows := make([]ObjectGrant, len(after))
				for i, m := range after {
					rows[i] = ObjectGrant{SubaccountID: id, IMEI: m}
				}
				if _, err := tx.db.NewInsert().Model(&rows).Exec(ctx); err != nil {
					return audit.Event{}, err
				}
			}
			granted = make([]Object, 0, len(after))
			if err := tx.db.NewSelect().Model(&granted).Where(grantedTo, id).OrderExpr(Objects.col("id")).Scan(ctx); err != nil {
				return audit.Event{}, err
			}
			return audit.New(policy.ActionGrantsReplace, id, id, map[string]any{"imei": before}, map[string]any{"imei": after})
		}})
	if err != nil {
		return nil, err
	}
	return granted, nil
}

// objectAudit is the audited form of a device's fields (object.create).
func objectAudit(o Object) map[string]any {
	return map[string]any{"imei": o.IMEI, "account_id": o.AccountID, "name": o.Name,
		"odometer": o.Odometer, "engine_hours": o.EngineHours}
}

// CreateObject registers the device o for its account o.AccountID
// (object.create, docs/design.md §9) in one transaction with its audit row. The
// account must be in scope, the caller's management scope (ErrNotFound
// otherwise); the policy has already allowed it. With idem, a retry with
// the same request returns the first response (replayed) and writes
// nothing; with another request it is ErrIdempotencyKeyReused. An imei
// that exists anywhere on the platform is ErrConflict.
func (s *Store) CreateObject(ctx context.Context, scope policy.Scope, actor Actor, o Object, idem *IdempotentRequest) (created Object, replayed bool, err error) {
	if _, err := s.compiledFor(scope, accountsScope); err != nil {
		return Object{}, false, err
	}
	o.ID = 0
	w := ManagementWrite{Accounts: []int64{o.AccountID}, Actor: actor, Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
		if err := s.checkQuota(ctx, tx.db, o.AccountID, limits.QuotaDevices); err != nil {
			return audit.Event{}, err
		}
		if _, err := tx.db.NewInsert().Model(&o).Returning("*").Exec(ctx); err != nil {
			return audit.Event{}, err
		}
		created = o
		return audit.New(policy.ActionObjectCreate, o.AccountID, o.ID, nil, objectAudit(o))
	}}
	if replayed, err = idempotentManage(ctx, s, scope, w, idem, &created); err != nil {
		return Object{}, false, err
	}
	return created, replayed, nil
}

// ManagedObject returns the device id when its owner is in scope, the
// caller's management scope; ErrNotFound otherwise, the same for a device
// that does not exist and for another tenant's.
func (s *Store) ManagedObject(ctx context.Context, scope policy.Scope, id int64) (Object, error) {
	q, err := s.scopedSelect(scope, accountsScope, (*Account)(nil))
	if err != nil {
		return Object{}, err
	}
	var o Object
	err = s.db.NewSelect().Model(&o).Where(Objects.col("id")+" = ?", id).
		Where(Objects.col("account_id")+" IN (?)", q.Column("id")).Scan(ctx)
	if err != nil {
		return Object{}, translateOwn(err)
	}
	return o, nil
}

// MoveObject gives the device id to the account to (object.move, docs/design.md
// §9: an IMEI is one physical device, unique on the platform, so a device
// changes hands instead of being registered twice) in one transaction
// with its audit row. The device's owner and to must both be in scope, the
// caller's management scope (ErrNotFound otherwise, the device included);
// the policy has already allowed it for to. The device's grants to the old
// owner's subaccounts are removed in the same transaction: they were the
// old owner's to give; its maintenance services follow it (they belong to
// the device's owner: the foreign key cascades). The audit row's target is
// the new owner; its changes hold account_id before and after, the imei,
// the subaccounts whose grant was removed (granted_to) and the ids of the
// services that moved with the device. Moving a device to its owner
// changes nothing and still stores an audit row, as a PATCH does.
func (s *Store) MoveObject(ctx context.Context, scope policy.Scope, actor Actor, id, to int64) (Object, error) {
	cur, err := s.ManagedObject(ctx, scope, id)
	if err != nil {
		return Object{}, err
	}
	var moved Object
	_, err = s.ManageInTx(ctx, scope, ManagementWrite{Accounts: []int64{cur.AccountID, to}, Actor: actor,
		Change: func(ctx context.Context, tx *Store) (audit.Event, error) {
			var o Object
			if err := tx.db.NewSelect().Model(&o).Where(Objects.col("id")+" = ?", id).For("UPDATE").Scan(ctx); err != nil {
				return audit.Event{}, err
			}
			if o.AccountID != cur.AccountID {
				// Moved by someone else since the scope check: its owner
				// may no longer be the caller's.
				return audit.Event{}, fmt.Errorf("%w: device %d changed hands", ErrNotFound, id)
			}
			granted, services := []int64{}, []int64{}
			if o.AccountID != to {
				if err := s.checkQuota(ctx, tx.db, to, limits.QuotaDevices); err != nil {
					return audit.Event{}, err
				}
				if err := tx.db.NewSelect().Model((*ObjectGrant)(nil)).Column("subaccount_id").Where("imei = ?", o.IMEI).
					OrderExpr("subaccount_id").Scan(ctx, &granted); err != nil {
					return audit.Event{}, err
				}
				if _, err := tx.db.NewDelete().Model((*ObjectGrant)(nil)).Where("imei = ?", o.IMEI).Exec(ctx); err != nil {
					return audit.Event{}, err
				}
				if err := tx.db.NewSelect().Model((*Service)(nil)).Column("service_id").Where("imei = ?", o.IMEI).
					OrderExpr("service_id").Scan(ctx, &services); err != nil {
					return audit.Event{}, err
				}
				// The services follow (ON UPDATE CASCADE of their foreign key).
				if _, err := tx.db.NewUpdate().Model((*Object)(nil)).Set("account_id = ?", to).
					Where(Objects.col("id")+" = ?", id).Exec(ctx); err != nil {
					return audit.Event{}, err
				}
			}
			moved = o
			moved.AccountID = to
			changes, err := audit.Diff(map[string]any{"account_id": o.AccountID, "granted_to": granted},
				map[string]any{"account_id": to, "granted_to": []int64{}})
			if err != nil {
				return audit.Event{}, err
			}
			if len(changes) > 0 {
				changes["imei"] = audit.Change{Before: o.IMEI, After: o.IMEI}
				changes["services"] = audit.Change{Before: services, After: services}
			}
			return audit.Event{Action: policy.ActionObjectMove, TargetAccountID: to, TargetID: id, Changes: changes}, nil
		}})
	if err != nil {
		return Object{}, err
	}
	return moved, nil
}
