package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetapi/fleetapi/policy"
)

// The due list as it was computed before the due indexes (migration
// 20270105000001): every service of the scope evaluated against its
// object's current readings and today. It is the reference of
// TestDueMatchesReference and is kept here verbatim, not shared with
// due.go, so that a change of the production query cannot change it.
const (
	refDueRemaining = `CROSS JOIN LATERAL (SELECT
	CASE WHEN "s"."odo" THEN "s"."odo_interval" - ("o"."odometer" - "s"."odo_last") END AS odo_remaining,
	CASE WHEN "s"."engh" THEN "s"."engh_interval" - ("o"."engine_hours" - "s"."engh_last") END AS engh_remaining,
	CASE WHEN "s"."days" AND "s"."days_last" IS NOT NULL
		THEN "s"."days_interval" - (?::date - "s"."days_last")::bigint END AS days_remaining
) AS "rem"`
	refDueCriteria = `CROSS JOIN LATERAL (SELECT array_remove(ARRAY[
	CASE WHEN "rem".odo_remaining <= 0 OR ("s"."odo_left" AND "rem".odo_remaining <= "s"."odo_left_num") THEN 'odo' END,
	CASE WHEN "rem".engh_remaining <= 0 OR ("s"."engh_left" AND "rem".engh_remaining <= "s"."engh_left_num") THEN 'engh' END,
	CASE WHEN "rem".days_remaining <= 0 OR ("s"."days_left" AND "rem".days_remaining <= "s"."days_left_num") THEN 'days' END
]::text[], NULL) AS due) AS "d"`
	refDueState = `CASE WHEN "rem".odo_remaining <= 0 OR "rem".engh_remaining <= 0 OR "rem".days_remaining <= 0
	THEN 'expired' ELSE 'soon' END AS state`
)

// DueReference is DueServices as it was before the due indexes:
// the scope in its page shape, every service of it joined with its object
// and filtered on the computed criteria, newest first.
func (s *Store) DueReference(ctx context.Context, scope policy.Scope, today time.Time, limit int) ([]DueService, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d", ErrBadListRequest, limit)
	}
	items := []DueService{}
	q, err := s.scopedSelect(scope, Services.Descriptor, &items)
	if err != nil {
		return nil, err
	}
	err = q.ColumnExpr("?TableColumns").
		ColumnExpr(`"o"."name" AS object_name`).
		ColumnExpr(`"rem".odo_remaining, "rem".engh_remaining, "rem".days_remaining`).
		ColumnExpr(`"d".due`).
		ColumnExpr(refDueState).
		Join(`JOIN "objects" AS "o" ON "o"."imei" = "s"."imei"`).
		Join(refDueRemaining, NewDate(today)).
		Join(refDueCriteria).
		Where(`cardinality("d".due) > 0`).
		OrderExpr(`"s"."service_id" DESC`).
		Limit(int64(limit)).
		Scan(ctx)
	return items, translateOwn(err)
}

// DueSQL renders the statement of DueServices for scope, today and limit
// (the golden test of the due query).
func (s *Store) DueSQL(scope policy.Scope, today time.Time, limit int) (string, error) {
	var items []DueService
	q, err := s.dueQuery(scope, today, limit, &items)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}
