package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
)

// Due criteria, in the order DueService.Due lists them.
const (
	DueOdo  = "odo"
	DueEngh = "engh"
	DueDays = "days"
)

// Due states of DueService.State.
const (
	// DueExpired: some enabled remaining is zero or less.
	DueExpired = "expired"
	// DueSoon: no remaining has run out, but one is within its *_left_num
	// threshold.
	DueSoon = "soon"
)

// DueService is a service record that is due (docs/design.md §5, /services/due):
// the record, the name of its object, what remains of each enabled
// criterion (nil where the criterion is off), the due criteria and the
// state.
type DueService struct {
	Service `bun:",extend"`

	ObjectName string `bun:"object_name,scanonly"`
	// OdoRemaining is kilometres, EnghRemaining hours, DaysRemaining days.
	OdoRemaining  *int64 `bun:"odo_remaining,scanonly"`
	EnghRemaining *int64 `bun:"engh_remaining,scanonly"`
	DaysRemaining *int64 `bun:"days_remaining,scanonly"`
	// Due lists the due criteria: a subset of DueOdo, DueEngh, DueDays in
	// that order; never empty for a listed record.
	Due   StringList `bun:"due,array,scanonly"`
	State string     `bun:"state,scanonly"`
}

// dueRemaining computes each criterion's remaining once per row: nil when
// the criterion is off (days also when days_last is unknown). The one
// argument is today's date.
const dueRemaining = `CROSS JOIN LATERAL (SELECT
	CASE WHEN "s"."odo" THEN "s"."odo_interval" - ("o"."odometer" - "s"."odo_last") END AS odo_remaining,
	CASE WHEN "s"."engh" THEN "s"."engh_interval" - ("o"."engine_hours" - "s"."engh_last") END AS engh_remaining,
	CASE WHEN "s"."days" AND "s"."days_last" IS NOT NULL
		THEN "s"."days_interval" - (?::date - "s"."days_last")::bigint END AS days_remaining
) AS "rem"`

// dueCriteria lists the due criteria of a row: run out, or within the
// threshold of an enabled *_left switch. A NULL remaining is never due.
const dueCriteria = `CROSS JOIN LATERAL (SELECT array_remove(ARRAY[
	CASE WHEN "rem".odo_remaining <= 0 OR ("s"."odo_left" AND "rem".odo_remaining <= "s"."odo_left_num") THEN 'odo' END,
	CASE WHEN "rem".engh_remaining <= 0 OR ("s"."engh_left" AND "rem".engh_remaining <= "s"."engh_left_num") THEN 'engh' END,
	CASE WHEN "rem".days_remaining <= 0 OR ("s"."days_left" AND "rem".days_remaining <= "s"."days_left_num") THEN 'days' END
]::text[], NULL) AS due) AS "d"`

// dueState is "expired" when some enabled remaining has run out.
const dueState = `CASE WHEN "rem".odo_remaining <= 0 OR "rem".engh_remaining <= 0 OR "rem".days_remaining <= 0
	THEN 'expired' ELSE 'soon' END AS state`

// dueDay is today as a day number (days since 2000-01-01), the unit of
// services.due_from (migration 20270105000001).
const dueDay = `(?::date - DATE '2000-01-01')::bigint`

// DueServices returns the service records that scope admits and that have at
// least one due criterion on the day today, newest first (service_id
// descending), at most limit of them. A criterion is due when its switch is
// on and its remaining (interval − (current − last), with the object's
// current odometer and engine hours, and today for days) is zero or less, or
// its *_left switch is on and the remaining is at most *_left_num. It
// returns policy.ErrScope for a scope that is not a services scope or that
// storage did not compile, ErrBadListRequest for a limit below 1, and ErrUnavailable when
// the database cannot be reached. It may run on a read replica
// (Store.WithReplicas).
//
// The due services are found through an index, not by evaluating every
// service of the scope: services.due_from (maintained by the database on
// writes of services and of objects' readings) is the first day on which a
// service is due, so the ids are those with due_from <= today, newest first
// (the scope in its counting shape, so that a tree of accounts can be read
// one account range at a time). Only the page's rows are then read with
// their object and the remaining values computed as before.
func (s *Store) DueServices(ctx context.Context, scope policy.Scope, today time.Time, limit int) ([]DueService, error) {
	if limit < 1 {
		return nil, fmt.Errorf("%w: limit %d", ErrBadListRequest, limit)
	}
	var items []DueService
	err := s.read(ctx, func(ctx context.Context, rs *Store) error {
		items = make([]DueService, 0, min(limit, 64))
		return rs.dueServices(ctx, scope, today, limit, &items)
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// dueServices is DueServices on s's database handle.
func (s *Store) dueServices(ctx context.Context, scope policy.Scope, today time.Time, limit int, items *[]DueService) error {
	q, err := s.dueQuery(scope, today, limit, items)
	if err != nil {
		return err
	}
	// Every value of this statement is the server's own.
	return translateOwn(q.Scan(ctx))
}

// dueQuery builds the statement of dueServices: the ids of the page from
// the due indexes, then the rows with their object, remaining values, due
// criteria and state. The outer filter on the criteria keeps a row out
// that the maintained state would wrongly call due (it never does:
// TestDueMatchesReference).
func (s *Store) dueQuery(scope policy.Scope, today time.Time, limit int, items *[]DueService) (*bun.SelectQuery, error) {
	ids, err := s.scopedCount(scope, Services.Descriptor, (*Service)(nil))
	if err != nil {
		return nil, err
	}
	day := NewDate(today)
	ids = ids.ColumnExpr(Services.col("service_id")).
		Where(Services.col("due_from")+" <= "+dueDay, day).
		OrderExpr(Services.col("service_id") + " DESC").
		Limit(int64(limit))
	return s.db.NewSelect().Model(items).
		ColumnExpr("?TableColumns").
		ColumnExpr(`"o"."name" AS object_name`).
		ColumnExpr(`"rem".odo_remaining, "rem".engh_remaining, "rem".days_remaining`).
		ColumnExpr(`"d".due`).
		ColumnExpr(dueState).
		Join(`JOIN "objects" AS "o" ON "o"."imei" = "s"."imei"`).
		Join(dueRemaining, day).
		Join(dueCriteria).
		Where(Services.col("service_id")+" IN (?)", ids).
		Where(`cardinality("d".due) > 0`).
		OrderExpr(Services.col("service_id") + " DESC"), nil
}
