package storage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
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
// reads every account (ExportUsage). Usage is billing data: it outlives
// the accounts it was counted for (an erase keeps it), with the ids of
// the accounts above each account and of the account billed for it,
// recorded when counted.

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
	// ReadingsAccepted and NotificationsCreated count live data (POST
	// /readings, docs/design.md §14).
	ReadingsAccepted     int64 `bun:"readings_accepted"`
	NotificationsCreated int64 `bun:"notifications_created"`
	// DeliveriesAttempted counts the attempts to send the account's
	// webhooks' deliveries (package delivery).
	DeliveriesAttempted int64 `bun:"deliveries_attempted"`
	// Ancestors are the accounts above AccountID when it was counted,
	// nearest first; BilledAccountID the account billed for it
	// (UsageCount).
	Ancestors       []int64 `bun:"ancestors,array"`
	BilledAccountID int64   `bun:"billed_account_id,nullzero"`
}

// usageScope restricts usage_daily to the accounts of the management
// scope; the rows of an erased account stay in the scope of the accounts
// that were above it.
var usageScope = scopedByAccounts[UsageDaily]("account_id").outlivingAccounts("ancestors")

// UsageCount is what the API served one account on one UTC day on one
// route: one row of AddUsage's batch. Day is any time on that day (its UTC
// date counts).
type UsageCount struct {
	AccountID int64
	// Ancestors are the accounts above AccountID, nearest first (its
	// manager, that account's manager, ...): GET /usage shows the usage
	// of an erased account to them.
	Ancestors []int64
	// BilledAccountID is the account billed for the usage: the top of
	// AccountID's tree below the operator's admins (itself at the top, or
	// for an admin); 0 means AccountID.
	BilledAccountID int64
	Day             time.Time
	Route           string
	// Requests answered; RowsReturned, the items of the lists among them;
	// Writes, the write requests (POST, PUT, PATCH, DELETE) answered 2xx;
	// Errors4xx and Errors5xx, the answers of those classes; BytesOut, the
	// response bodies' bytes.
	Requests, RowsReturned, Writes, Errors4xx, Errors5xx, BytesOut int64
	// ReadingsAccepted and NotificationsCreated: what the requests' POST
	// /readings batches stored and fired (docs/design.md §14).
	ReadingsAccepted, NotificationsCreated int64
	// DeliveriesAttempted: the attempts to send the account's webhooks'
	// deliveries (counted by the sender, under route "webhook
	// deliveries", in the attempt's own transaction).
	DeliveriesAttempted int64
}

// AddUsage adds the counts to usage_daily in one statement: a row that
// exists gets the counts added (INSERT ... ON CONFLICT DO UPDATE SET x =
// x + EXCLUDED.x), so that every replica's counts add up whatever their
// order. Rows are written in key order, so that two replicas adding the
// same keys lock them in the same order (no deadlock). A count for an
// account that no longer exists (erased since) is added too: usage
// outlives its account. The statement is all
// or nothing: after an error nothing was added and the same batch can be
// added again. It returns ErrUnavailable when the database cannot be
// reached.
func (s *Store) AddUsage(ctx context.Context, counts []UsageCount) error {
	if len(counts) == 0 {
		return nil
	}
	q, args := usageUpsert(counts)
	_, err := s.db.ExecContext(ctx, q, args...)
	return translateOwn(err)
}

// usageUpsert is AddUsage's statement and arguments for counts (at least
// one).
func usageUpsert(counts []UsageCount) (string, []any) {
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
	acc, billed, req, ret, wr, e4, e5, out := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	days, routes, ancestors := make([]string, n), make([]string, n), make([]string, n)
	readings, notes, deliveries := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, r := range rows {
		c := r.c
		acc[i], days[i], routes[i] = c.AccountID, r.day, c.Route
		// one array per row: unnest would flatten a two-dimensional one
		ancestors[i] = int64sLiteral(c.Ancestors)
		if billed[i] = c.BilledAccountID; billed[i] == 0 {
			billed[i] = c.AccountID
		}
		req[i], ret[i], wr[i], e4[i], e5[i], out[i] = c.Requests, c.RowsReturned, c.Writes, c.Errors4xx, c.Errors5xx, c.BytesOut
		readings[i], notes[i], deliveries[i] = c.ReadingsAccepted, c.NotificationsCreated, c.DeliveriesAttempted
	}
	return `INSERT INTO usage_daily AS u
    (account_id, day, route, requests, rows_returned, writes, errors_4xx, errors_5xx, bytes_out, ancestors, billed_account_id,
     readings_accepted, notifications_created, deliveries_attempted)
SELECT v.account_id, v.day::date, v.route, v.requests, v.rows_returned, v.writes, v.errors_4xx, v.errors_5xx, v.bytes_out,
    v.ancestors::bigint[], v.billed_account_id, v.readings_accepted, v.notifications_created, v.deliveries_attempted
FROM unnest(?::bigint[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::text[], ?::bigint[],
    ?::bigint[], ?::bigint[], ?::bigint[])
    WITH ORDINALITY AS v(account_id, day, route, requests, rows_returned, writes, errors_4xx, errors_5xx, bytes_out, ancestors, billed_account_id,
    readings_accepted, notifications_created, deliveries_attempted, n)
ORDER BY v.n
ON CONFLICT (account_id, day, route) DO UPDATE SET
    requests = u.requests + EXCLUDED.requests,
    rows_returned = u.rows_returned + EXCLUDED.rows_returned,
    writes = u.writes + EXCLUDED.writes,
    errors_4xx = u.errors_4xx + EXCLUDED.errors_4xx,
    errors_5xx = u.errors_5xx + EXCLUDED.errors_5xx,
    bytes_out = u.bytes_out + EXCLUDED.bytes_out,
    readings_accepted = u.readings_accepted + EXCLUDED.readings_accepted,
    notifications_created = u.notifications_created + EXCLUDED.notifications_created,
    deliveries_attempted = u.deliveries_attempted + EXCLUDED.deliveries_attempted`,
		[]any{pgdialect.Array(acc), pgdialect.Array(days), pgdialect.Array(routes), pgdialect.Array(req), pgdialect.Array(ret),
			pgdialect.Array(wr), pgdialect.Array(e4), pgdialect.Array(e5), pgdialect.Array(out), pgdialect.Array(ancestors), pgdialect.Array(billed),
			pgdialect.Array(readings), pgdialect.Array(notes), pgdialect.Array(deliveries)}
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
	Period       string    `bun:"-" json:"period"`
	Start        time.Time `bun:"period" json:"-"`
	Requests     int64     `bun:"requests" json:"requests"`
	RowsReturned int64     `bun:"rows_returned" json:"rows_returned"`
	Writes       int64     `bun:"writes" json:"writes"`
	Errors4xx    int64     `bun:"errors_4xx" json:"errors_4xx"`
	Errors5xx    int64     `bun:"errors_5xx" json:"errors_5xx"`
	BytesOut     int64     `bun:"bytes_out" json:"bytes_out"`
	// ReadingsAccepted and NotificationsCreated: live data (docs/design.md §14).
	ReadingsAccepted     int64 `bun:"readings_accepted" json:"readings_accepted"`
	NotificationsCreated int64 `bun:"notifications_created" json:"notifications_created"`
	// DeliveriesAttempted: attempts to send the account's webhooks'
	// deliveries.
	DeliveriesAttempted int64            `bun:"deliveries_attempted" json:"deliveries_attempted"`
	Routes              map[string]int64 `bun:"routes,type:jsonb" json:"routes"`
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
// is policy.ErrScope; a page or per_page out of bounds (checkPage) is
// ErrBadListRequest; it returns ErrUnavailable when the database cannot
// be reached.
func (s *Store) UsageTotals(ctx context.Context, scope policy.Scope, req UsageRequest) (UsagePage, error) {
	if err := checkPage(req.Page, req.PerPage); err != nil {
		return UsagePage{}, err
	}
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
		ColumnExpr("sum(readings_accepted) AS readings_accepted, sum(notifications_created) AS notifications_created").
		ColumnExpr("sum(deliveries_attempted) AS deliveries_attempted").
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
		ColumnExpr("sum(readings_accepted)::bigint AS readings_accepted, sum(notifications_created)::bigint AS notifications_created").
		ColumnExpr("sum(deliveries_attempted)::bigint AS deliveries_attempted").
		// the deliveries' row is no route: it counts no request
		ColumnExpr("COALESCE(jsonb_object_agg(route, requests) FILTER (WHERE route <> ?), '{}') AS routes", deliveryUsageRoute).
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
// of one route on one UTC day, and the account billed for it.
type UsageRow struct {
	Day       string `json:"day"`
	AccountID int64  `json:"account_id"`
	// Username is the account's, ErasedMark once it is erased (its id
	// stays: the export attributes the usage without personal data).
	Username     string `json:"username"`
	Route        string `json:"route"`
	Requests     int64  `json:"requests"`
	RowsReturned int64  `json:"rows_returned"`
	Writes       int64  `json:"writes"`
	Errors4xx    int64  `json:"errors_4xx"`
	Errors5xx    int64  `json:"errors_5xx"`
	BytesOut     int64  `json:"bytes_out"`
	// BilledAccountID is the account billed for the usage (the top of the
	// account's tree below the admins, when counted) and BilledUsername
	// its username (ErasedMark once it is erased): a subaccount's and a
	// user's usage roll up to it.
	BilledAccountID int64  `json:"billed_account_id"`
	BilledUsername  string `json:"billed_username"`
}

// ExportUsage calls each with every row of usage_daily from the UTC day
// from to to (inclusive), every account's (erased ones included),
// ordered by day, account and route, streaming (the rows are not held in
// memory): the operator's billing export (`fleetapi usage export`), a
// trusted CLI job outside any scope. It stops at the first error each
// returns and returns it; it returns ErrUnavailable when the database
// cannot be reached.
func (s *Store) ExportUsage(ctx context.Context, from, to Date, each func(UsageRow) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT to_char(u.day, 'YYYY-MM-DD'), u.account_id, COALESCE(a.username, ?), u.route,
    u.requests, u.rows_returned, u.writes, u.errors_4xx, u.errors_5xx, u.bytes_out, COALESCE(u.billed_account_id, u.account_id), COALESCE(b.username, ?)
FROM usage_daily u LEFT JOIN accounts a ON a.id = u.account_id LEFT JOIN accounts b ON b.id = COALESCE(u.billed_account_id, u.account_id)
WHERE u.day BETWEEN ?::date AND ?::date
ORDER BY u.day, u.account_id, u.route`, ErasedMark, ErasedMark, from.String(), to.String())
	if err != nil {
		return translateOwn(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.Day, &r.AccountID, &r.Username, &r.Route, &r.Requests, &r.RowsReturned, &r.Writes,
			&r.Errors4xx, &r.Errors5xx, &r.BytesOut, &r.BilledAccountID, &r.BilledUsername); err != nil {
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

// int64sLiteral is ids as a PostgreSQL array literal ("{3,1}").
func int64sLiteral(ids []int64) string {
	b := []byte{'{'}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, '}'))
}
