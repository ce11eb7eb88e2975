package storage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/policy"
)

// Usage metering (docs/design.md §12): what the API served each account, per UTC
// day and route template, in usage_daily. The servers count in memory
// (api/metering) and add their counts with AddUsage; GET /usage reads them
// under the management scope (UsageTotals), the operator's billing export
// reads every account (ExportUsage).

// UsageDaily is a row of usage_daily: one account's use of one route on
// one UTC day.
type UsageDaily struct {
	bun.BaseModel `bun:"table:usage_daily,alias:ud"`

	// AccountID is the account the usage is attributed to. The table's
	// key is (account_id, day, route); the model names account_id alone
	// as its key because a descriptor has one (describe), and it is only
	// read through UsageTotals' grouping, never by key.
	AccountID int64 `bun:"account_id,pk"`
	// Day is the UTC day, "YYYY-MM-DD".
	Day string `bun:"day"`
	// Route is the method and route template: "GET /services/{id}".
	Route        string `bun:"route"`
	Requests     int64  `bun:"requests"`
	RowsReturned int64  `bun:"rows_returned"`
	Writes       int64  `bun:"writes"`
	Errors4xx    int64  `bun:"errors_4xx"`
	Errors5xx    int64  `bun:"errors_5xx"`
	BytesOut     int64  `bun:"bytes_out"`
}

// usageScope restricts usage_daily to the accounts of the management
// scope.
var usageScope = scopedByAccounts[UsageDaily]("account_id")

// UsageCount is what the API served one account on one UTC day on one
// route: one row of AddUsage's batch. Day is any time on that day (its UTC
// date counts).
type UsageCount struct {
	AccountID int64
	Day       time.Time
	Route     string
	// Requests answered; RowsReturned, the items of the lists among them;
	// Writes, the write requests (POST, PUT, PATCH, DELETE) answered 2xx;
	// Errors4xx and Errors5xx, the answers of those classes; BytesOut, the
	// response bodies' bytes.
	Requests, RowsReturned, Writes, Errors4xx, Errors5xx, BytesOut int64
}

// AddUsage adds the counts to usage_daily in one statement: a row that
// exists gets the counts added (INSERT ... ON CONFLICT DO UPDATE SET x =
// x + EXCLUDED.x), so that every replica's counts add up whatever their
// order. Rows are written in key order, so that two replicas adding the
// same keys lock them in the same order (no deadlock). A count for an
// account that no longer exists (erased) is skipped. The statement is all
// or nothing: after an error nothing was added and the same batch can be
// added again. It returns ErrUnavailable when the database cannot be
// reached.
func (s *Store) AddUsage(ctx context.Context, counts []UsageCount) error {
	if len(counts) == 0 {
		return nil
	}
	type keyed struct {
		c   UsageCount
		day string
	}
	rows := make([]keyed, len(counts))
	for i, c := range counts {
		rows[i] = keyed{c, c.Day.UTC().Format(DateLayout)}
	}
	slices.SortFunc(rows, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.c.AccountID, b.c.AccountID), strings.Compare(a.day, b.day), strings.Compare(a.c.Route, b.c.Route))
	})
	n := len(rows)
	acc, req, ret, wr, e4, e5, out := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	days, routes := make([]string, n), make([]string, n)
	for i, r := range rows {
		c := r.c
		acc[i], days[i], routes[i] = c.AccountID, r.day, c.Route
		req[i], ret[i], wr[i], e4[i], e5[i], out[i] = c.Requests, c.RowsReturned, c.Writes, c.Errors4xx, c.Errors5xx, c.BytesOut
	}
	// The accounts first (KEY SHARE, in the lock order of every write:
	// docs/locking.md), then the rows: an erase of one of them either
	// waits for the flush or ends before it, and its count is then
	// skipped, instead of the statement failing on the foreign key it
	// checks at its end.
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := lockAccounts(ctx, tx, accountLocks{}.with(forKeyShare, acc...)); err != nil {
			return err
		}
		return addUsage(ctx, tx, acc, days, routes, req, ret, wr, e4, e5, out)
	})
	return translateOwn(err)
}

// addUsage is AddUsage's statement, its columns in arrays in key order.
func addUsage(ctx context.Context, tx bun.Tx, acc []int64, days, routes []string, req, ret, wr, e4, e5, out []int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO usage_daily AS u
    (account_id, day, route, requests, rows_returned, writes, errors_4xx, errors_5xx, bytes_out)
SELECT v.account_id, v.day::date, v.route, v.requests, v.rows_returned, v.writes, v.errors_4xx, v.errors_5xx, v.bytes_out
FROM unnest(?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[])
    WITH ORDINALITY AS v(account_id, day, route, requests, rows_returned, writes, errors_4xx, errors_5xx, bytes_out, n)
WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = v.account_id)
ORDER BY v.n
ON CONFLICT (account_id, day, route) DO UPDATE SET
    requests = u.requests + EXCLUDED.requests,
    rows_returned = u.rows_returned + EXCLUDED.rows_returned,
    writes = u.writes + EXCLUDED.writes,
    errors_4xx = u.errors_4xx + EXCLUDED.errors_4xx,
    errors_5xx = u.errors_5xx + EXCLUDED.errors_5xx,
    bytes_out = u.bytes_out + EXCLUDED.bytes_out`,
		pgdialect.Array(acc), pgdialect.Array(days), pgdialect.Array(routes), pgdialect.Array(req), pgdialect.Array(ret),
		pgdialect.Array(wr), pgdialect.Array(e4), pgdialect.Array(e5), pgdialect.Array(out))
	return err
}

// UsageRequest is a read of GET /usage: the UTC days From to To
// (inclusive), optionally one account, grouped by day or by month, paged.
type UsageRequest struct {
	From, To Date
	// AccountID, when not 0, restricts the read to that account.
	AccountID int64
	// Monthly groups by calendar month instead of by day.
	Monthly       bool
	Page, PerPage int
}

// UsageTotal is one account's use in one period (a day or a month): the
// sums of its routes' counts, and the requests of each route.
type UsageTotal struct {
	AccountID int64 `bun:"account_id" json:"account_id"`
	// Period is the day ("2026-11-25") or the month ("2026-11").
	Period       string           `bun:"-" json:"period"`
	Start        time.Time        `bun:"period" json:"-"`
	Requests     int64            `bun:"requests" json:"requests"`
	RowsReturned int64            `bun:"rows_returned" json:"rows_returned"`
	Writes       int64            `bun:"writes" json:"writes"`
	Errors4xx    int64            `bun:"errors_4xx" json:"errors_4xx"`
	Errors5xx    int64            `bun:"errors_5xx" json:"errors_5xx"`
	BytesOut     int64            `bun:"bytes_out" json:"bytes_out"`
	Routes       map[string]int64 `bun:"routes,type:jsonb" json:"routes"`
}

// UsagePage is a page of UsageTotals and the number of (account, period)
// pairs in all.
type UsagePage struct {
	Items []UsageTotal
	Total int64
}

// UsageTotals returns the usage of the accounts in the management scope
// (policy.Engine.ManagementScope) for req, ordered by period, then
// account. A scope of another resource, or one storage cannot translate,
// is policy.ErrScope; it returns ErrUnavailable when the database cannot
// be reached.
func (s *Store) UsageTotals(ctx context.Context, scope policy.Scope, req UsageRequest) (UsagePage, error) {
	inner, err := s.scopedSelect(scope, usageScope, (*UsageDaily)(nil))
	if err != nil {
		return UsagePage{}, err
	}
	period := usageScope.col("day")
	if req.Monthly {
		period = "date_trunc('month', " + period + ")::date"
	}
	inner = inner.ColumnExpr(usageScope.col("account_id")+" AS account_id").
		ColumnExpr(period+" AS period").
		ColumnExpr(usageScope.col("route")+" AS route").
		ColumnExpr("sum(requests) AS requests, sum(rows_returned) AS rows_returned, sum(writes) AS writes").
		ColumnExpr("sum(errors_4xx) AS errors_4xx, sum(errors_5xx) AS errors_5xx, sum(bytes_out) AS bytes_out").
		Where(usageScope.col("day")+" BETWEEN ?::date AND ?::date", req.From.String(), req.To.String()).
		GroupExpr("1, 2, 3")
	if req.AccountID != 0 {
		inner = inner.Where(usageScope.col("account_id")+" = ?", req.AccountID)
	}
	page := UsagePage{Items: []UsageTotal{}}
	err = s.db.NewSelect().With("r", inner).TableExpr("r").
		ColumnExpr("count(DISTINCT (account_id, period))").Scan(ctx, &page.Total)
	if err != nil {
		return UsagePage{}, translateOwn(err)
	}
	err = s.db.NewSelect().With("r", inner).TableExpr("r").
		ColumnExpr("account_id, period").
		ColumnExpr("sum(requests)::bigint AS requests, sum(rows_returned)::bigint AS rows_returned, sum(writes)::bigint AS writes").
		ColumnExpr("sum(errors_4xx)::bigint AS errors_4xx, sum(errors_5xx)::bigint AS errors_5xx, sum(bytes_out)::bigint AS bytes_out").
		ColumnExpr("jsonb_object_agg(route, requests) AS routes").
		GroupExpr("account_id, period").OrderExpr("period, account_id").
		Limit(int64(req.PerPage)).Offset(int64(req.Page-1)*int64(req.PerPage)).Scan(ctx, &page.Items)
	if err != nil {
		return UsagePage{}, translateOwn(err)
	}
	for i := range page.Items {
		u := &page.Items[i]
		u.Period = u.Start.Format(DateLayout)
		if req.Monthly {
			u.Period = u.Start.Format("2006-01")
		}
	}
	return page, nil
}

// UsageRow is one row of the operator's billing export: an account's use
// of one route on one UTC day.
type UsageRow struct {
	Day          string `json:"day"`
	AccountID    int64  `json:"account_id"`
	Username     string `json:"username"`
	Route        string `json:"route"`
	Requests     int64  `json:"requests"`
	RowsReturned int64  `json:"rows_returned"`
	Writes       int64  `json:"writes"`
	Errors4xx    int64  `json:"errors_4xx"`
	Errors5xx    int64  `json:"errors_5xx"`
	BytesOut     int64  `json:"bytes_out"`
}

// ExportUsage calls each with every row of usage_daily from the UTC day
// from to to (inclusive), every account's, ordered by day, account and
// route, streaming (the rows are not held in memory): the operator's
// billing export (`fleetapi usage export`), a trusted CLI job outside any
// scope. It stops at the first error each returns and returns it; it
// returns ErrUnavailable when the database cannot be reached.
func (s *Store) ExportUsage(ctx context.Context, from, to Date, each func(UsageRow) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT to_char(u.day, 'YYYY-MM-DD'), u.account_id, a.username, u.route,
    u.requests, u.rows_returned, u.writes, u.errors_4xx, u.errors_5xx, u.bytes_out
FROM usage_daily u JOIN accounts a ON a.id = u.account_id
WHERE u.day BETWEEN ?::date AND ?::date
ORDER BY u.day, u.account_id, u.route`, from.String(), to.String())
	if err != nil {
		return translateOwn(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Day, &r.AccountID, &r.Username, &r.Route, &r.Requests, &r.RowsReturned, &r.Writes,
			&r.Errors4xx, &r.Errors5xx, &r.BytesOut); err != nil {
			return translateOwn(err)
		}
		if err := each(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("usage export: %w", translateOwn(err))
	}
	return nil
}
