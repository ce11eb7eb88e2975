package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/policy"
)

// ErrBadListRequest is returned for a ListRequest that names a field the
// resource does not have, or a filter value of the wrong type. The api
// package validates requests first, so it signals a programming error.
var ErrBadListRequest = errors.New("bad list request")

// Filter is one exact-match filter: a field and its value, already parsed to
// the field's kind (int64 within Field.IntRange, string, bool, Date from
// ParseDate, time.Time from ParseTimestamp, or for KindObject the
// JSONObject of ParseJSONObject), so that PostgreSQL accepts it.
type Filter struct {
	Field string
	Value any
}

// ListRequest is a validated list request.
type ListRequest struct {
	Page    int
	PerPage int
	// Search is the trimmed free-text search; empty for none.
	Search  string
	Sort    string
	Desc    bool
	Filters []Filter
}

// Page is one page of a list and the total number of matching rows.
type Page[T any] struct {
	Items []T
	Total int64
}

// list runs a list request on the resource described by l, restricted by
// scope: WHERE (scope) AND (filters) AND (search) ORDER BY sort, id
// LIMIT/OFFSET, plus the count of matching rows when the page alone does
// not tell it.
func list[T any](ctx context.Context, s *Store, l Listing, scope policy.RowScope, req ListRequest) (Page[T], error) {
	if scope.Resource != l.Resource {
		return Page[T]{}, fmt.Errorf("%w: scope of %q used on %q", ErrScope, scope.Resource, l.Resource)
	}
	items := make([]T, 0, req.PerPage)
	q, err := s.scopedSelect(scope, &items)
	if err != nil {
		return Page[T]{}, err
	}
	if err := applyFilters(q, l, req); err != nil {
		return Page[T]{}, err
	}
	count, err := s.scopedCount(scope, (*T)(nil))
	if err != nil {
		return Page[T]{}, err
	}
	if err := applyFilters(count, l, req); err != nil {
		return Page[T]{}, err
	}
	sortField, ok := l.Field(req.Sort)
	if !ok {
		return Page[T]{}, fmt.Errorf("%w: sort %q", ErrBadListRequest, req.Sort)
	}
	dir := " ASC"
	if req.Desc {
		dir = " DESC"
	}
	q.OrderExpr(l.col(sortField.Name) + dir)
	if sortField.Name != l.ID {
		q.OrderExpr(l.col(l.ID) + dir)
	}
	offset := int64(req.Page-1) * int64(req.PerPage)
	q.Limit(int64(req.PerPage)).Offset(offset)
	if err := q.Scan(ctx); err != nil {
		return Page[T]{}, Translate(err)
	}
	// A partly filled page tells the total without counting.
	if n := len(items); n > 0 && n < req.PerPage {
		return Page[T]{Items: items, Total: offset + int64(n)}, nil
	}
	if len(items) == 0 && req.Page == 1 {
		return Page[T]{Items: items, Total: 0}, nil
	}
	total, err := count.Count(ctx)
	if err != nil {
		return Page[T]{}, Translate(err)
	}
	return Page[T]{Items: items, Total: int64(total)}, nil
}

// col qualifies a column with the resource's table alias.
func (l Listing) col(name string) string { return `"` + l.alias + `"."` + name + `"` }

// applyFilters adds the exact-match filters and the search to q. Every
// value is bound; search escapes %, _ and \ so that they match themselves.
func applyFilters(q *bun.SelectQuery, l Listing, req ListRequest) error {
	for _, f := range req.Filters {
		field, ok := l.Field(f.Field)
		if !ok || field.Name == l.ID {
			return fmt.Errorf("%w: filter %q", ErrBadListRequest, f.Field)
		}
		switch field.Kind {
		case KindTextList:
			v, ok := f.Value.(string)
			if !ok {
				return fmt.Errorf("%w: filter %s wants a string", ErrBadListRequest, f.Field)
			}
			q.Where("? = ANY("+l.col(field.Name)+")", v)
		case KindObject:
			b, err := json.Marshal(f.Value)
			if err != nil {
				return fmt.Errorf("%w: filter %s: %v", ErrBadListRequest, f.Field, err)
			}
			q.Where(l.col(field.Name)+" = ?::jsonb", string(b))
		default:
			q.Where(l.col(field.Name)+" = ?", f.Value)
		}
	}
	if req.Search != "" {
		pattern := "%" + EscapeLike(req.Search) + "%"
		var parts []string
		var args []any
		for _, c := range l.Search {
			parts = append(parts, l.col(c)+` ILIKE ? ESCAPE '\'`)
			args = append(args, pattern)
		}
		q.Where("("+strings.Join(parts, " OR ")+")", args...)
	}
	return nil
}

// ListServices returns a page of the service records that scope admits and
// req selects. It returns ErrScope for a scope that does not translate,
// ErrBadListRequest for a request naming unknown fields, and
// ErrUnavailable when the database cannot be reached.
func (s *Store) ListServices(ctx context.Context, scope policy.RowScope, req ListRequest) (Page[Service], error) {
	return list[Service](ctx, s, ServiceListing(), scope, req)
}

// ListReports returns a page of the reports that scope admits and req
// selects. Errors as ListServices.
func (s *Store) ListReports(ctx context.Context, scope policy.RowScope, req ListRequest) (Page[Report], error) {
	return list[Report](ctx, s, ReportListing(), scope, req)
}

// ListEvents returns a page of the event rules that scope admits and req
// selects. Errors as ListServices.
func (s *Store) ListEvents(ctx context.Context, scope policy.RowScope, req ListRequest) (Page[Event], error) {
	return list[Event](ctx, s, EventListing(), scope, req)
}

// EventByID returns the event rule with the given id when scope admits it.
// A rule that does not exist and one outside the scope are both
// ErrNotFound. It returns ErrScope and ErrUnavailable as ListServices.
func (s *Store) EventByID(ctx context.Context, scope policy.RowScope, id int64) (Event, error) {
	if scope.Resource != "events" {
		return Event{}, fmt.Errorf("%w: scope of %q used on events", ErrScope, scope.Resource)
	}
	var ev Event
	q, err := s.scopedSelect(scope, &ev)
	if err != nil {
		return Event{}, err
	}
	if err := q.Where(`"e"."event_id" = ?`, id).Limit(1).Scan(ctx); err != nil {
		// id is an int64 the api parsed: a data exception is the server's.
		return Event{}, translateOwn(err)
	}
	return ev, nil
}
