package storage

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
)

// Notifications is the notifications resource: GET /notifications,
// /notifications/{id} and /notifications/stream (docs/design.md §14).
//
// Not counted: notifications are high-volume appends (one per rule that
// fires), and a counted table pays a statement-level upsert into
// account_row_counts on every insert batch and a version bump besides, on
// the ingestion's hot path, for a total only the unfiltered first page of
// a list reads. Its totals count rows (docs/decisions.md, "Notifications").
// Its list is newest first (id descending) unless the request names an
// order.
var Notifications = declare[Notification](newestFirst)

// Notification is a row of notifications: what fired (docs/design.md §14).
// event_id is null for a service notification, service_id for an event
// rule's. The row's xid (the inserting transaction's id, the streams'
// order) is not part of the model: only the streams read it
// (NotificationsAfter).
type Notification struct {
	bun.BaseModel `bun:"table:notifications,alias:n"`

	ID        int64     `bun:"id,pk,autoincrement" json:"id"`
	AccountID int64     `bun:"account_id,notnull" json:"account_id"`
	EventID   *int64    `bun:"event_id" json:"event_id" list:"filter"`
	ServiceID *int64    `bun:"service_id" json:"service_id"`
	Type      string    `bun:"type,notnull" json:"type" list:"sort,filter"`
	IMEI      string    `bun:"imei,notnull" json:"imei" list:"sort,filter"`
	ObjectID  int64     `bun:"object_id,notnull" json:"object_id"`
	Time      time.Time `bun:"time,notnull" json:"time" list:"sort,range"`
	CreatedAt time.Time `bun:"created_at,notnull,default:current_timestamp" json:"created_at"`
	Value     string    `bun:"value,notnull" json:"value"`
	Lat       *float64  `bun:"lat" json:"lat"`
	Lon       *float64  `bun:"lon" json:"lon"`
	Message   string    `bun:"message,notnull" json:"message"`
}

// NotificationByID returns the notification with the given id when scope
// (a notifications scope) admits it. One that does not exist and one
// outside the scope are both ErrNotFound. It may run on a read replica
// (Store.WithReplicas). It returns policy.ErrScope for a scope of another
// resource or one storage did not compile, and ErrUnavailable when the
// database cannot be reached.
func (s *Store) NotificationByID(ctx context.Context, scope policy.Scope, id int64) (Notification, error) {
	var n Notification
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		q, err := rs.scopedSelect(scope, Notifications.Descriptor, &n)
		if err != nil {
			return err
		}
		// id is an int64 the api parsed: a data exception is the server's.
		return translateOwn(q.Where(Notifications.col(Notifications.id.Name)+" = ?", id).Limit(1).Scan(ctx))
	})
	if err != nil {
		return Notification{}, err
	}
	return n, nil
}
