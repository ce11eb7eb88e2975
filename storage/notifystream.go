package storage

import (
	"context"
	"fmt"
	"strconv"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
)

// NotificationCursor is a position in the notification streams' order:
// (xid, id), the inserting transaction's id then the notification's id
// (docs/decisions.md, "Notifications: ordering, resume, the stream limit
// and revocation"). A stream delivers the rows strictly after its cursor.
type NotificationCursor struct {
	XID uint64
	ID  int64
}

// StreamedNotification is a notification with its place in the streams'
// order.
type StreamedNotification struct {
	Notification
	Cursor NotificationCursor
}

// streamRow is a notification read with its xid as text (xid8 has no Go
// scanner of its own).
type streamRow struct {
	bun.BaseModel `bun:"table:notifications,alias:n"`
	Notification  `bun:",extend"`
	XIDText       string `bun:"xid_text,scanonly"`
}

// NotificationStreamStart returns the cursor of a stream that starts now:
// every notification whose transaction is not older than every
// transaction running now (xid >= the snapshot's xmin) is after it, every
// older one (committed or aborted already) before it. It reads no table.
func (s *Store) NotificationStreamStart(ctx context.Context) (NotificationCursor, error) {
	var xmin string
	if err := s.db.NewRaw("SELECT pg_snapshot_xmin(pg_current_snapshot())::text").Scan(ctx, &xmin); err != nil {
		return NotificationCursor{}, translateOwn(err)
	}
	x, err := strconv.ParseUint(xmin, 10, 64)
	if err != nil {
		return NotificationCursor{}, fmt.Errorf("snapshot xmin %q: %w", xmin, err)
	}
	return NotificationCursor{XID: x, ID: 0}, nil
}

// NotificationStreamCursor returns the cursor of the notification id when
// scope (a notifications scope) admits it: the position of a stream
// resumed after it (Last-Event-ID). One that does not exist (never, or no
// longer retained) and one outside the scope are both ErrNotFound. It
// reads the primary: the streams' order is the primary's transactions'.
func (s *Store) NotificationStreamCursor(ctx context.Context, scope policy.Scope, id int64) (NotificationCursor, error) {
	var row streamRow
	q, err := s.scopedSelect(scope, Notifications.Descriptor, &row)
	if err != nil {
		return NotificationCursor{}, err
	}
	err = q.ColumnExpr(`"n"."xid"::text AS xid_text`).Column("id").
		Where(Notifications.col("id")+" = ?", id).Limit(1).Scan(ctx)
	if err != nil {
		return NotificationCursor{}, translateOwn(err)
	}
	return row.cursor()
}

// NotificationsAfter returns at most limit notifications that scope (a
// notifications scope) admits, strictly after the cursor in (xid, id)
// order, among those whose transaction is older than every transaction
// running now (xid < pg_snapshot_xmin(pg_current_snapshot())): a row
// committed later can then never sort before one returned, so a stream
// that moves its cursor to the last row returned skips nothing. It reads
// the primary.
func (s *Store) NotificationsAfter(ctx context.Context, scope policy.Scope, after NotificationCursor, limit int) ([]StreamedNotification, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d", ErrBadListRequest, limit)
	}
	var rows []streamRow
	q, err := s.scopedSelect(scope, Notifications.Descriptor, &rows)
	if err != nil {
		return nil, err
	}
	err = q.Column(notificationColumns()...).ColumnExpr(`"n"."xid"::text AS xid_text`).
		Where(`("n"."xid", "n"."id") > (?::text::xid8, ?)`, strconv.FormatUint(after.XID, 10), after.ID).
		Where(`"n"."xid" < pg_snapshot_xmin(pg_current_snapshot())`).
		OrderExpr(`"n"."xid", "n"."id"`).Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, translateOwn(err)
	}
	out := make([]StreamedNotification, len(rows))
	for i, r := range rows {
		c, err := r.cursor()
		if err != nil {
			return nil, err
		}
		out[i] = StreamedNotification{Notification: r.Notification, Cursor: c}
	}
	return out, nil
}

// notificationColumns are the model's columns.
func notificationColumns() []string {
	return []string{"id", "account_id", "event_id", "service_id", "type", "imei", "object_id", "time", "created_at", "value", "lat", "lon", "message"}
}

func (r streamRow) cursor() (NotificationCursor, error) {
	x, err := strconv.ParseUint(r.XIDText, 10, 64)
	if err != nil {
		return NotificationCursor{}, fmt.Errorf("notification %d: xid %q: %w", r.ID, r.XIDText, err)
	}
	return NotificationCursor{XID: x, ID: r.ID}, nil
}
