package storage

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/rules"
)

// notificationRow is one notification to insert (docs/design.md §14): what
// a rule or a service record fired for a device. The ingest, the clock's
// connection_no sweep and the service states (notifyServiceStates) all
// write through it and insertNotifications.
type notificationRow struct {
	AccountID int64     `json:"account_id"`
	EventID   *int64    `json:"event_id"`
	ServiceID *int64    `json:"service_id"`
	Type      string    `json:"type"`
	IMEI      string    `json:"imei"`
	ObjectID  int64     `json:"object_id"`
	Time      time.Time `json:"time"`
	Value     string    `json:"value"`
	Lat       *float64  `json:"lat"`
	Lon       *float64  `json:"lon"`
	Message   string    `json:"message"`
}

// firedRow is the notification of the rule f fired for device d at the
// position lat, lon (a reading's for the ingest, the device's last for the
// clock), at f.Time.
func firedRow(d *ruleDevice, f rules.Fired, lat, lon *float64) notificationRow {
	id := f.RuleID
	return notificationRow{AccountID: d.AccountID, EventID: &id, Type: f.Type, IMEI: d.IMEI, ObjectID: d.ID,
		Time: f.Time, Value: f.Value, Lat: lat, Lon: lon, Message: f.Message}
}

// insertNotificationsSQL inserts the notifications of a jsonb array (?)
// and, in the same statement, queues their webhook deliveries
// (docs/design.md §14, "Deliveries"): one webhook_deliveries row per
// notification and active webhook whose types are empty or name the
// notification's type, owned by an account that could list it — the
// notification's account, the accounts above it (manager_id, at most
// MaxAncestors levels: m1, m2 and m2's manager) and its subaccounts. The
// delivery belongs to the webhook's owner. Whether the owner may see the
// notification is decided again when it is sent (package delivery): this
// is only the set that could. With no webhook at all the deliveries' part
// reads one empty index and inserts nothing. The webhooks are locked FOR
// KEY SHARE as they are read (what the foreign key takes anyway): one
// being deleted is waited for and, once gone, left out, instead of
// failing the notification's transaction on the foreign key.
const insertNotificationsSQL = `WITH n AS (
INSERT INTO notifications (account_id, event_id, service_id, type, imei, object_id, time, value, lat, lon, message)
SELECT account_id, event_id, service_id, type, imei, object_id, time, value, lat, lon, message
FROM jsonb_to_recordset(?::jsonb) AS r(account_id bigint, event_id bigint, service_id bigint, type text, imei text, object_id bigint,
  time timestamptz, value text, lat float8, lon float8, message text)
RETURNING id, account_id, type
)
INSERT INTO webhook_deliveries (webhook_id, account_id, notification_id, type)
SELECT w.id, w.account_id, n.id, '` + DeliveryNotificationType + `'
FROM n
JOIN accounts AS a ON a.id = n.account_id
LEFT JOIN accounts AS m1 ON m1.id = a.manager_id
LEFT JOIN accounts AS m2 ON m2.id = m1.manager_id
CROSS JOIN LATERAL (
  SELECT o FROM unnest(ARRAY[n.account_id, a.manager_id, m1.manager_id, m2.manager_id]) AS o WHERE o IS NOT NULL
  UNION
  SELECT s.id FROM accounts AS s WHERE s.manager_id = n.account_id AND s.type = 'subaccount'
) AS owner (id)
JOIN webhooks AS w ON w.account_id = owner.id AND w.active AND (cardinality(w.types) = 0 OR n.type = ANY (w.types))
WHERE EXISTS (SELECT 1 FROM webhooks WHERE active)
ORDER BY n.id, w.id
FOR KEY SHARE OF w`

// insertNotifications inserts rows into notifications in one statement, so
// that the table's statement trigger wakes the streams once, and none when
// rows is empty (an empty insert would still fire it). The rows travel as
// one jsonb parameter, whatever their number; their times are truncated
// to the microsecond, as a time bound as a parameter is. The same
// statement queues the notifications' webhook deliveries
// (insertNotificationsSQL), in the caller's transaction: a notification
// committed has its deliveries queued. It returns how many it
// inserted per account, for usage metering (nil when none).
func insertNotifications(ctx context.Context, db bun.IDB, rows []notificationRow) (map[int64]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	for i := range rows {
		rows[i].Time = rows[i].Time.Truncate(time.Microsecond)
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	_, err = db.NewRaw(insertNotificationsSQL, string(doc)).Exec(ctx)
	if err != nil {
		return nil, err
	}
	created := map[int64]int64{}
	for _, r := range rows {
		created[r.AccountID]++
	}
	return created, nil
}

// addCounts adds the counts of more to into (made when nil) and returns
// it.
func addCounts(into, more map[int64]int64) map[int64]int64 {
	if len(more) == 0 {
		return into
	}
	if into == nil {
		into = map[int64]int64{}
	}
	for k, n := range more {
		into[k] += n
	}
	return into
}
