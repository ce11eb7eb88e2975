package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/rules"
)

// serviceRow is a notify_service_expire service record with its device's
// odometer and engine hours and the state last notified.
type serviceRow struct {
	ServiceID           int64      `bun:"service_id"`
	AccountID           int64      `bun:"account_id"`
	IMEI                string     `bun:"imei"`
	ObjectID            int64      `bun:"object_id"`
	Name                string     `bun:"name"`
	Odo                 bool       `bun:"odo"`
	OdoInterval         int64      `bun:"odo_interval"`
	OdoLast             int64      `bun:"odo_last"`
	OdoLeft             bool       `bun:"odo_left"`
	OdoLeftNum          int64      `bun:"odo_left_num"`
	Engh                bool       `bun:"engh"`
	EnghInterval        int64      `bun:"engh_interval"`
	EnghLast            int64      `bun:"engh_last"`
	EnghLeft            bool       `bun:"engh_left"`
	EnghLeftNum         int64      `bun:"engh_left_num"`
	Days                bool       `bun:"days"`
	DaysInterval        int64      `bun:"days_interval"`
	DaysLast            *time.Time `bun:"days_last"`
	DaysLeft            bool       `bun:"days_left"`
	DaysLeftNum         int64      `bun:"days_left_num"`
	Odometer            int64      `bun:"odometer"`
	EngineHours         int64      `bun:"engine_hours"`
	Notified            string     `bun:"notified"`
	NotifyServiceExpire bool       `bun:"notify_service_expire"`
}

// notifyServiceStates checks the notify_service_expire services of the
// devices objectIDs on the day today (docs/design.md §14): a service whose
// §5 state (rules.ServiceState) differs from the state last notified
// (service_states) has its new state stored, and entering 'soon' or
// 'expired' inserts one notification (type service_soon or
// service_expired, service_id set, event_id null, time today). It runs in
// the caller's transaction, which holds the devices (ingest: FOR NO KEY
// UPDATE; the clock's sweep likewise), and returns how many notifications
// it created.
func notifyServiceStates(ctx context.Context, tx bun.Tx, objectIDs []int64, today time.Time) (created int, err error) {
	if len(objectIDs) == 0 {
		return 0, nil
	}
	var rows []serviceRow
	err = tx.NewRaw(`SELECT s.service_id, s.account_id, s.imei, o.id AS object_id, s.name, s.odo, s.odo_interval, s.odo_last, s.odo_left,
  s.odo_left_num, s.engh, s.engh_interval, s.engh_last, s.engh_left, s.engh_left_num, s.days, s.days_interval, s.days_last,
  s.days_left, s.days_left_num, o.odometer, o.engine_hours, COALESCE(ss.state, '') AS notified, s.notify_service_expire
FROM services s JOIN objects o ON o.imei = s.imei AND o.account_id = s.account_id
LEFT JOIN service_states ss ON ss.service_id = s.service_id
WHERE o.id = ANY(?) AND s.notify_service_expire
ORDER BY s.service_id`, pgdialect.Array(objectIDs)).Scan(ctx, &rows)
	if err != nil {
		return 0, err
	}
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	var notes []notificationRow
	var changedIDs, changedAccounts []int64
	var changedStates []string
	for _, r := range rows {
		state := rules.ServiceState(r.service(), r.Odometer, r.EngineHours, day)
		if state == r.Notified {
			continue
		}
		changedIDs = append(changedIDs, r.ServiceID)
		changedAccounts = append(changedAccounts, r.AccountID)
		changedStates = append(changedStates, state)
		if state == "" {
			continue // back to not due (a service done): re-armed, nothing to tell
		}
		typ, msg := rules.ServiceSoon, r.Name+": service due soon"
		if state == "expired" {
			typ, msg = rules.ServiceExpired, r.Name+": service expired"
		}
		id := r.ServiceID
		notes = append(notes, notificationRow{AccountID: r.AccountID, ServiceID: &id, Type: typ, IMEI: r.IMEI, ObjectID: r.ObjectID,
			Time: day, Value: state, Message: msg})
	}
	if len(changedIDs) == 0 {
		return 0, nil
	}
	_, err = tx.NewRaw(`INSERT INTO service_states (service_id, account_id, state, changed_at)
SELECT u.service_id, u.account_id, u.state, now() FROM unnest(?::bigint[], ?::bigint[], ?::text[]) AS u(service_id, account_id, state)
ON CONFLICT (service_id) DO UPDATE SET state = EXCLUDED.state, changed_at = EXCLUDED.changed_at`,
		pgdialect.Array(changedIDs), pgdialect.Array(changedAccounts), pgdialect.Array(changedStates)).Exec(ctx)
	if err != nil {
		return 0, err
	}
	if err := insertNotifications(ctx, tx, notes); err != nil {
		return 0, err
	}
	return len(notes), nil
}

// service is r as the rules' due computation reads it.
func (r serviceRow) service() rules.Service {
	return rules.Service{ID: r.ServiceID, Name: r.Name, Odo: r.Odo, Engh: r.Engh, Days: r.Days,
		OdoInterval: r.OdoInterval, OdoLast: r.OdoLast, OdoLeft: r.OdoLeft, OdoLeftNum: r.OdoLeftNum,
		EnghInterval: r.EnghInterval, EnghLast: r.EnghLast, EnghLeft: r.EnghLeft, EnghLeftNum: r.EnghLeftNum,
		DaysInterval: r.DaysInterval, DaysLast: r.DaysLast, DaysLeft: r.DaysLeft, DaysLeftNum: r.DaysLeftNum,
		NotifyServiceExpire: r.NotifyServiceExpire}
}
