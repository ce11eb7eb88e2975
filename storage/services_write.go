package storage

import (
	"context"
	"time"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/audit"
)

// serviceWrites are the writes of service records (docs/design.md §15):
// the record's device locked FOR NO KEY UPDATE (step 3 of
// docs/locking.md), as the ingest locks it, so that the §5 state of the
// record (service_states) moves under the same lock whoever moves it.
var serviceWrites = configWrites[Service]{
	model: Services, create: audit.ActionServiceCreate, update: audit.ActionServiceUpdate, remove: audit.ActionServiceDelete,
	id:          func(s *Service) *int64 { return &s.ServiceID },
	owner:       func(s *Service) *int64 { return &s.AccountID },
	devices:     func(s *Service) []string { return []string{s.IMEI} },
	lockDevices: true,
	audit:       serviceAudit,
	after:       serviceStatesAfter,
}

// serviceStatesAfter brings the state of a written record up to date
// (docs/decisions.md "Writes of service records"): a record that no longer
// notifies (or is deleted) forgets its state, so that it notifies again
// from the start when switched back on; the others take their §5 state at
// the device's current odometer and engine hours today
// (notifyServiceStates): entering soon or expired notifies once, and a
// record moved out of them (a changed interval, the work done) is armed
// again.
func serviceStatesAfter(ctx context.Context, tx *Store, _, new *Service, devices []int64) error {
	if new == nil {
		return nil // the state row goes with the record (ON DELETE CASCADE)
	}
	if !new.NotifyServiceExpire {
		_, err := tx.db.NewRaw("DELETE FROM service_states WHERE service_id = ?", new.ServiceID).Exec(ctx)
		return err
	}
	var now time.Time
	if err := tx.db.NewRaw("SELECT now()").Scan(ctx, &now); err != nil {
		return err
	}
	_, err := notifyServiceStates(ctx, tx.db, devices, now.UTC(), now)
	return err
}

// serviceAudit is a service record as the audit trail records it: its
// wire fields.
func serviceAudit(s Service) map[string]any {
	var last any
	if s.DaysLast != nil {
		last = s.DaysLast.String()
	}
	return map[string]any{
		"imei": s.IMEI, "name": s.Name, "odo": s.Odo, "odo_interval": s.OdoInterval, "odo_last": s.OdoLast,
		"engh": s.Engh, "engh_interval": s.EnghInterval, "engh_last": s.EnghLast, "days": s.Days, "days_interval": s.DaysInterval,
		"days_last": last, "odo_left": s.OdoLeft, "odo_left_num": s.OdoLeftNum, "engh_left": s.EnghLeft, "engh_left_num": s.EnghLeftNum,
		"days_left": s.DaysLeft, "days_left_num": s.DaysLeftNum, "update_last": s.UpdateLast, "notify_service_expire": s.NotifyServiceExpire,
	}
}

// CreateService stores the service record v for its account v.AccountID
// (service.create, docs/design.md §15) like CreateEvent: its device must
// be the account's (an InvalidFields "imei" otherwise), a record of the same
// name on the device is ErrConflict. A record created due soon or expired
// with notify_service_expire notifies at once.
func (s *Store) CreateService(ctx context.Context, scope, mscope policy.Scope, actor Actor, v Service, idem *IdempotentRequest) (Service, bool, error) {
	return serviceWrites.createRow(ctx, s, scope, mscope, actor, v, idem)
}

// UpdateService changes the service record id in scope like UpdateEvent
// (service.update).
func (s *Store) UpdateService(ctx context.Context, scope, mscope policy.Scope, actor Actor, id int64, apply func(cur Service) (Service, error)) (Service, error) {
	return serviceWrites.changeRow(ctx, s, scope, mscope, actor, id, audit.ActionServiceUpdate,
		func(_ context.Context, _ *Store, cur Service) (Service, error) { return apply(cur) })
}

// DeleteService deletes the service record id in scope like DeleteEvent
// (service.delete); its state goes with it.
func (s *Store) DeleteService(ctx context.Context, scope, mscope policy.Scope, actor Actor, id int64) error {
	return serviceWrites.deleteRow(ctx, s, scope, mscope, actor, id)
}

// ServiceDone records that the work of the service record id in scope was
// done (service.done, docs/design.md §15): odo_last and engh_last take
// odometer and engineHours when given, else the device's current
// odometer and engine hours (moved by its readings), read under the
// device's lock; days_last takes day. The record's state moves with it
// (a record due no more is armed again). Errors: those of UpdateEvent,
// and an InvalidFields for a value the record's columns cannot hold.
func (s *Store) ServiceDone(ctx context.Context, scope, mscope policy.Scope, actor Actor, id int64, day Date, odometer, engineHours *int64) (Service, error) {
	return serviceWrites.changeRow(ctx, s, scope, mscope, actor, id, audit.ActionServiceDone,
		func(ctx context.Context, tx *Store, cur Service) (Service, error) {
			var dev struct {
				Odometer    int64 `bun:"odometer"`
				EngineHours int64 `bun:"engine_hours"`
			}
			if err := tx.db.NewRaw("SELECT odometer, engine_hours FROM objects WHERE imei = ? AND account_id = ?",
				cur.IMEI, cur.AccountID).Scan(ctx, &dev); err != nil {
				return cur, err
			}
			if odometer == nil {
				odometer = &dev.Odometer
			}
			if engineHours == nil {
				engineHours = &dev.EngineHours
			}
			bad := InvalidFields{}
			if *odometer > maxInteger {
				bad["odometer"] = "the device's odometer is above what odo_last holds (2147483647 km)"
			}
			if *engineHours > maxInteger {
				bad["engine_hours"] = "the device's engine hours are above what engh_last holds (2147483647 h)"
			}
			if err := bad.orNil(); err != nil {
				return cur, err
			}
			cur.OdoLast, cur.EnghLast, cur.DaysLast = int(*odometer), int(*engineHours), &day
			return cur, nil
		})
}

// maxInteger is the largest value of an integer column (PostgreSQL's
// integer: 32 bits).
const maxInteger = 1<<31 - 1
