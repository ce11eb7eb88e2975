package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/rules"
)

// serviceDue is a notify_service_expire service record with what the §5
// computation reads of its device, and the state last notified.
type serviceDue struct {
	Service     `bun:",extend"`
	ObjectID    int64    `bun:"object_id"`
	Odometer    int64    `bun:"odometer"`
	EngineHours int64    `bun:"engine_hours"`
	Lat         *float64 `bun:"lat"`
	Lon         *float64 `bun:"lon"`
	Prev        string   `bun:"prev"`
}

// rule is the record as rules.ServiceState reads it.
func (s serviceDue) rule() rules.Service {
	r := rules.Service{
		ID: s.ServiceID, Name: s.Name,
		Odo: s.Odo, OdoInterval: int64(s.OdoInterval), OdoLast: int64(s.OdoLast), OdoLeft: s.OdoLeft, OdoLeftNum: int64(s.OdoLeftNum),
		Engh: s.Engh, EnghInterval: int64(s.EnghInterval), EnghLast: int64(s.EnghLast), EnghLeft: s.EnghLeft, EnghLeftNum: int64(s.EnghLeftNum),
		Days: s.Days, DaysInterval: int64(s.DaysInterval), DaysLeft: s.DaysLeft, DaysLeftNum: int64(s.DaysLeftNum),
		NotifyServiceExpire: s.NotifyServiceExpire,
	}
	if s.DaysLast != nil {
		d := time.Date(s.DaysLast.Year(), s.DaysLast.Month(), s.DaysLast.Day(), 0, 0, 0, 0, time.UTC)
		r.DaysLast = &d
	}
	return r
}

// notifyServiceStates brings the notify_service_expire service records of
// the devices objectIDs up to date (docs/design.md §14): each record's §5
// state (rules.ServiceState at its device's current odometer and engine
// hours on the UTC day today) that differs from the one service_states
// holds is stored, and entering "soon" or "expired" inserts one
// notification (service_soon, service_expired; service_id set, event_id
// null) at time at: the reading's time for the ingest, the clock's for
// the clock. It returns the notifications created per account.
//
// The caller holds the devices' rows (FOR NO KEY UPDATE, after their
// accounts: docs/locking.md) in its transaction db, so that two callers
// for one device (a reading and the clock, two replicas' clocks) are
// serialised and the second sees the first's state: each state entered is
// notified once. Both the ingest (on a reading that moves the odometer or
// the engine hours) and the clock (as the day moves) call it.
func notifyServiceStates(ctx context.Context, db bun.IDB, objectIDs []int64, today, at time.Time) (map[int64]int64, error) {
	if len(objectIDs) == 0 {
		return nil, nil
	}
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	var due []serviceDue
	err := db.NewSelect().Model(&due).ColumnExpr("s.*").
		ColumnExpr("o.id AS object_id, o.odometer, o.engine_hours, o.lat, o.lon, COALESCE(ss.state, '') AS prev").
		Join("JOIN objects AS o ON o.imei = s.imei AND o.account_id = s.account_id").
		Join("LEFT JOIN service_states AS ss ON ss.service_id = s.service_id").
		Where("o.id = ANY(?)", pgdialect.Array(objectIDs)).Where("s.notify_service_expire").
		Order("s.service_id").Scan(ctx)
	if err != nil {
		return nil, err
	}
	var fired []notificationRow
	for _, s := range due {
		state := rules.ServiceState(s.rule(), s.Odometer, s.EngineHours, day)
		if state == s.Prev {
			continue
		}
		if _, err := db.NewRaw(`INSERT INTO service_states (service_id, account_id, state, changed_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (service_id) DO UPDATE SET state = EXCLUDED.state, account_id = EXCLUDED.account_id, changed_at = EXCLUDED.changed_at`,
			s.ServiceID, s.AccountID, state, at).Exec(ctx); err != nil {
			return nil, err
		}
		typ, what := "", ""
		switch state {
		case "soon":
			typ, what = rules.ServiceSoon, "due soon"
		case "expired":
			typ, what = rules.ServiceExpired, "expired"
		default:
			continue // back to not due (the work was done): nothing to tell
		}
		id := s.ServiceID
		fired = append(fired, notificationRow{AccountID: s.AccountID, ServiceID: &id, Type: typ, IMEI: s.IMEI, ObjectID: s.ObjectID,
			Time: at, Value: state, Lat: s.Lat, Lon: s.Lon, Message: fmt.Sprintf("Service %q of device %s: %s", s.Name, s.IMEI, what)})
	}
	return insertNotifications(ctx, db, fired)
}
