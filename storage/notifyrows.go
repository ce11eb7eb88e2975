package storage

import (
	"context"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// firedRow is one notification to insert (docs/design.md §14): what a
// rule or a service record fired for a device.
type firedRow struct {
	AccountID int64
	EventID   *int64
	ServiceID *int64
	Type      string
	IMEI      string
	ObjectID  int64
	Time      time.Time
	Value     string
	Lat, Lon  *float64
	Message   string
}

// insertFired inserts rows into notifications in one statement (the
// table's wake trigger fires once) and returns how many it inserted per
// account, for usage metering.
func insertFired(ctx context.Context, db bun.IDB, rows []firedRow) (map[int64]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	values := make([]any, 0, len(rows)*11)
	var sql strings.Builder
	sql.WriteString("INSERT INTO notifications (account_id, event_id, service_id, type, imei, object_id, time, value, lat, lon, message) VALUES ")
	for i, r := range rows {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		values = append(values, r.AccountID, r.EventID, r.ServiceID, r.Type, r.IMEI, r.ObjectID, r.Time, r.Value, r.Lat, r.Lon, r.Message)
	}
	if _, err := db.NewRaw(sql.String(), values...).Exec(ctx); err != nil {
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
