package api

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/api/metering"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// Usage metering (docs/design.md §12): the guard wraps the answer of every
// authenticated request in a usageWriter and hands what it saw to the
// Meter (Config.Usage); GET /usage reads the flushed counts under the
// management scope.

// usageWriter counts the status and body bytes of an answer; the list
// encoder (sendJSON) sets rows.
type usageWriter struct {
	statusRecorder
	bytes int64
	rows  int
	// readings and notifications are what a POST /readings stored and
	// fired (postReadings sets them).
	readings, notifications int64
	// done is set when the guard's chain returned; false in meter means a
	// panic, which the recovery answers 500.
	done bool
}

// Write counts the body's bytes.
func (u *usageWriter) Write(b []byte) (int, error) {
	n, err := u.statusRecorder.Write(b)
	u.bytes += int64(n)
	return n, err
}

// meter records the answer u of r to the principal's account, with the
// accounts above it and the account billed for it (the top of its tree
// below the admins: itself at the top or for an admin). A 401 (the
// account cannot use the API) is attributed to nobody, like every failed
// authentication.
func (s *Server) meter(u *usageWriter, r *http.Request, p tenancy.Principal) {
	status := u.status
	switch {
	case !u.done:
		status = http.StatusInternalServerError
	case status == 0:
		status = http.StatusOK
	}
	if status == http.StatusUnauthorized {
		return
	}
	route, ok := s.routeNames[r.Pattern]
	if !ok {
		route = r.Pattern
	}
	ancestors := make([]int64, len(p.Ancestors))
	billed := p.Account.ID
	below := p.Account.Type != tenancy.Admin
	for i, a := range p.Ancestors {
		ancestors[i] = a.ID
		if below = below && a.Type != tenancy.Admin; below {
			billed = a.ID
		}
	}
	s.cfg.Usage.Record(metering.Request{AccountID: p.Account.ID, Ancestors: ancestors, BilledAccountID: billed,
		Method: r.Method, At: s.cfg.Now(), Route: route, Status: status, Rows: u.rows, BytesOut: u.bytes,
		Readings: u.readings, Notifications: u.notifications})
}

// routeNames maps each route's mux pattern to its permission form.
func routeNames() map[string]string {
	out := map[string]string{}
	for _, rt := range tenancy.Routes() {
		out[rt.Method+" "+BasePath+rt.Template] = rt.String()
	}
	return out
}

// The parameters of GET /usage.
const (
	paramFrom      = "from"
	paramTo        = "to"
	paramAccountID = "account_id"
	paramGroup     = "group"
)

// maxUsageDays is the longest range of days GET /usage reads at once.
const maxUsageDays = 366

// registerUsage declares GET /usage (docs/design.md §12).
func (s *Server) registerUsage(g *fuego.Server) {
	q := openapi3.ParameterInQuery
	fuego.Get(g, "/usage", s.getUsage, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_usage"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Paged usage of the accounts the caller manages"),
		fuego.OptionDescription("What the API served each account in the caller's management scope, per UTC day or month: " +
			"requests (and per route template), rows returned by lists, writes, 4xx and 5xx answers, response bytes. " +
			"The counts are flushed by each server every few seconds (FLEET_USAGE_FLUSH_INTERVAL), so the last seconds may be missing. " +
			"An account_id outside the scope is 404; whose usage a caller reads is the management policy's usage.read decision " +
			"(403 MANAGEMENT_DENIED). Ordered by period, then account. Needs the token permission GET /usage."),
		fuego.OptionQuery(paramFrom, "First UTC day (YYYY-MM-DD); default: the first day of to's month."),
		paramSchema(q, paramFrom, dateSchema),
		fuego.OptionQuery(paramTo, fmt.Sprintf("Last UTC day (YYYY-MM-DD), inclusive; default: today. At most %d days after from.", maxUsageDays-1)),
		paramSchema(q, paramTo, dateSchema),
		fuego.OptionQueryInt(paramAccountID, "Only this account (in the caller's management scope); default: every account in it."),
		paramSchema(q, paramAccountID, func(s *openapi3.Schema) { s.WithFormat("int64").WithMin(1) }),
		fuego.OptionQuery(paramGroup, "Period of each item: a UTC day or a calendar month.", fuego.ParamDefault("day")),
		paramSchema(q, paramGroup, func(s *openapi3.Schema) { s.WithEnum("day", "month") }),
		pagingParams(),
		respondsPage(usageSchema(), []storage.UsageTotal{exampleUsage()}),
	})...)
}

// getUsage answers GET /usage: the parameters (400), the account asked
// for in the management scope (404), the policy's usage.read decision on
// it (403; without account_id on the caller's own account), then the
// counts of the accounts in the scope.
func (s *Server) getUsage(c fuego.ContextNoBody) (*Envelope[[]storage.UsageTotal], error) {
	ctx := c.Context()
	req, err := parseUsageRequest(c.Request().URL.RawQuery, s.cfg.Now().UTC())
	if err != nil {
		return nil, err
	}
	m, err := s.managerFrom(ctx)
	if err != nil {
		return nil, err
	}
	id := req.AccountID
	if id == 0 {
		id = m.principal.Account.ID
	}
	_, target, err := s.target(ctx, m, id)
	if err != nil {
		return nil, err
	}
	change := map[string]any{"account_id": id, "from": req.From.String(), "to": req.To.String()}
	if err := s.decideManagement(ctx, m, policy.ActionUsageRead, target, change); err != nil {
		return nil, err
	}
	page, err := s.cfg.Store.UsageTotals(ctx, m.scope, req)
	if err != nil {
		return nil, err
	}
	per := int64(req.PerPage)
	return &Envelope[[]storage.UsageTotal]{Data: page.Items,
		Meta: Meta{Paging: &Paging{Page: req.Page, PerPage: req.PerPage, Total: page.Total, Pages: (page.Total + per - 1) / per}}}, nil
}

// parseUsageRequest reads the query of GET /usage strictly: an unknown,
// repeated or malformed parameter, from after to, or a range of more than
// maxUsageDays days is INVALID_PARAMETER naming the parameter.
func parseUsageRequest(raw string, now time.Time) (storage.UsageRequest, error) {
	req := storage.UsageRequest{Page: 1, PerPage: storage.DefaultPerPage}
	q, perr := parseQuery(raw)
	if perr != nil {
		return req, perr
	}
	var from, to *storage.Date
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if !storable(name) {
			return req, invalidParam(name, "unknown parameter")
		}
		if len(q[name]) > 1 {
			return req, invalidParam(name, "given more than once")
		}
		v := q[name][0]
		var err *Error
		switch name {
		case paramFrom, paramTo:
			d, perr := storage.ParseDate(v)
			if perr != nil {
				err = invalidParam(name, reasonDate)
			} else if name == paramFrom {
				from = &d
			} else {
				to = &d
			}
		case paramAccountID:
			req.AccountID, err = parseInt(name, v, 1, math.MaxInt64)
		case paramGroup:
			req.Monthly, err = parseChoice(name, v, "day", "month")
		case paramPage:
			req.Page, err = parseBoundedInt(name, v, 1, storage.MaxPage)
		case paramPerPage:
			req.PerPage, err = parseBoundedInt(name, v, 1, storage.MaxPerPage)
		default:
			err = invalidParam(name, "unknown parameter")
		}
		if err != nil {
			return req, err
		}
	}
	req.To = storage.NewDate(now)
	if to != nil {
		req.To = *to
	}
	req.From = storage.NewDate(time.Date(req.To.Year(), req.To.Month(), 1, 0, 0, 0, 0, time.UTC))
	if from != nil {
		req.From = *from
	}
	if req.From.After(req.To.Time) {
		return req, invalidParam(paramFrom, "must not be after to")
	}
	if req.To.Sub(req.From.Time) >= maxUsageDays*24*time.Hour {
		return req, invalidParam(paramTo, fmt.Sprintf("must be less than %d days after from", maxUsageDays))
	}
	return req, nil
}

// usageSchema is the Usage component.
func usageSchema() wireType {
	return wireType{name: "Usage", value: storage.UsageTotal{},
		description: "What the API served one account in one period (docs/design.md §12): the sums over its routes, and the requests of each route.",
		fields: map[string][]fieldOpt{
			"account_id":            {minimum(1), desc("The account: the authenticated token's (a subaccount's requests are its own).")},
			"period":                {desc(`The UTC day ("2026-11-25") or, with group=month, the month ("2026-11").`)},
			"requests":              {minimum(0), desc("Requests answered (every status but 401).")},
			"rows_returned":         {minimum(0), desc("Items returned by list routes.")},
			"writes":                {minimum(0), desc("Requests of POST, PUT, PATCH or DELETE answered 2xx.")},
			"errors_4xx":            {minimum(0), desc("Answers with a 4xx status (401 excepted: those are attributed to nobody).")},
			"errors_5xx":            {minimum(0), desc("Answers with a 5xx status.")},
			"bytes_out":             {minimum(0), desc("Bytes of the response bodies.")},
			"readings_accepted":     {minimum(0), desc("Readings the account's POST /readings requests stored (docs/design.md §14).")},
			"notifications_created": {minimum(0), desc("Notifications those requests created: rules fired, services entering soon or expired.")},
			"deliveries_attempted":  {minimum(0), desc("Attempts to send the account's webhooks' deliveries (docs/design.md §14), each counted once, retries included.")},
			"routes":                {desc(`Requests per route template, "METHOD /template" (for example "GET /services/{id}").`)},
		}}
}

func exampleUsage() storage.UsageTotal {
	return storage.UsageTotal{AccountID: 14, Period: "2026-01-15", Requests: 1250, RowsReturned: 48200, Writes: 12,
		Errors4xx: 3, Errors5xx: 0, BytesOut: 5230000, Routes: map[string]int64{"GET /services": 1200, "POST /passengers": 12, "GET /me": 38}}
}
