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

// ErrBadListRequest is returned for a ListRequest that the api should not
// have made (a page or limit below 1, a filter value of the wrong type):
// the api package parses requests with the descriptor, so it signals a
// programming error.
var ErrBadListRequest = errors.New("bad list request")

// Filter is one exact-match filter: a field of the descriptor and its
// value, already parsed to the field's kind (int64 within Field.IntRange,
// string, bool, Date from ParseDate, time.Time from ParseTimestamp, or for
// KindObject the JSONObject of ParseJSONObject), so that PostgreSQL
// accepts it.
type Filter struct {
	Field Field
	Value any
}

// ListRequest is a list request parsed with the resource's descriptor: its
// fields are the descriptor's own, so storage does not check names again.
type ListRequest struct {
	Page    int
	PerPage int
	// Search is the trimmed free-text search; empty for none.
	Search string
	// Sort is the field to order by; the zero Field orders by the id.
	Sort    Field
	Desc    bool
	Filters []Filter
}

// Page is one page of a list and the total number of matching rows.
type Page[T any] struct {
	Items []T
	Total int64
}

// List returns the page of m's rows that scope admits and req selects:
// WHERE (scope) AND (filters) AND (search) ORDER BY sort, id LIMIT/OFFSET,
// plus the total of matching rows when the page alone does not tell it:
// without filters and search from the row counters when the scope has a
// counter form (compileCounters), otherwise by counting the rows (the
// count query is built only then). The list of a tenant resource may run
// on a read replica (Store.WithReplicas); the lists under the management
// scope run on the primary. It returns policy.ErrScope for a
// scope of another resource or one storage cannot translate,
// ErrBadListRequest for a request the api should not have made, and
// ErrUnavailable when the database cannot be reached.
func List[T any](ctx context.Context, s *Store, scope policy.Scope, m Model[T], req ListRequest) (Page[T], error) {
	if req.Page < 1 || req.PerPage < 1 {
		return Page[T]{}, fmt.Errorf("%w: page %d, per page %d", ErrBadListRequest, req.Page, req.PerPage)
	}
	d := m.Descriptor
	// The scope's SQL, once per request: the page, the count and the
	// counters' total all come from it.
	c, err := s.compiledFor(scope, d.scopeOwner())
	if err != nil {
		return Page[T]{}, err
	}
	on := func(ctx context.Context, s *Store) (Page[T], error) {
		return listPage[T](ctx, d, req, func(model any, forCount bool) (*bun.SelectQuery, error) {
			if forCount {
				return s.selectIn(d, c.count, model), nil
			}
			return s.selectIn(d, c.page, model), nil
		}, func(ctx context.Context) (int64, bool, error) {
			return s.counterTotal(ctx, c, d)
		})
	}
	if descriptorOf(d.resource) != d {
		// A list under the management scope (accounts, tokens, audit
		// events): on the primary, so that a manager sees the writes just
		// made (a revoked token, a new account, its audit event).
		return on(ctx, s)
	}
	var page Page[T]
	err = s.read(ctx, func(ctx context.Context, rs *Store) error {
		var err error
		page, err = on(ctx, rs)
		return err
	})
	return page, err
}

// listPage is List over the rows that start admits: start begins the
// SELECT of the page (forCount false) or of the count (true) with the
// rows' restriction, and listPage adds the filters, search, order and
// paging of req. counted, when not nil, is asked first for the total of a
// request without filters and search: it returns the total and true, or
// false when the rows must be counted.
func listPage[T any](ctx context.Context, d *Descriptor, req ListRequest, start func(model any, forCount bool) (*bun.SelectQuery, error), counted func(context.Context) (int64, bool, error)) (Page[T], error) {
	items := make([]T, 0, req.PerPage)
	q, err := start(&items, false)
	if err != nil {
		return Page[T]{}, err
	}
	if err := applyFilters(q, d, req); err != nil {
		return Page[T]{}, err
	}
	sort := req.Sort.Name
	if sort == "" {
		sort = d.id.Name
	} else if f, ok := d.Field(sort); !ok || f != req.Sort || !f.Sort {
		return Page[T]{}, fmt.Errorf("%w: sort by %q, not a sortable field of %s", ErrBadListRequest, sort, d.resource)
	}
	dir := " ASC"
	if req.Desc {
		dir = " DESC"
	}
	q.OrderExpr(d.col(sort) + dir)
	if sort != d.id.Name {
		q.OrderExpr(d.col(d.id.Name) + dir)
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
	if counted != nil && len(req.Filters) == 0 && req.Search == "" {
		total, ok, err := counted(ctx)
		if err != nil {
			return Page[T]{}, err
		}
		if ok {
			return Page[T]{Items: items, Total: total}, nil
		}
	}
	count, err := start((*T)(nil), true)
	if err != nil {
		return Page[T]{}, err
	}
	if err := applyFilters(count, d, req); err != nil {
		return Page[T]{}, err
	}
	total, err := count.Count(ctx)
	if err != nil {
		return Page[T]{}, Translate(err)
	}
	return Page[T]{Items: items, Total: int64(total)}, nil
}

// applyFilters adds the exact-match filters and the search to q. Every
// value is bound; search escapes %, _ and \ so that they match themselves.
func applyFilters(q *bun.SelectQuery, d *Descriptor, req ListRequest) error {
	for _, f := range req.Filters {
		// A guard, not a parse: the api took the field from d, so only a
		// field of another resource (a programming error) fails here.
		if df, ok := d.Field(f.Field.Name); !ok || df != f.Field || !df.Filter {
			return fmt.Errorf("%w: filter %q, not a filterable field of %s", ErrBadListRequest, f.Field.Name, d.resource)
		}
		switch f.Field.Kind {
		case KindTextList:
			v, ok := f.Value.(string)
			if !ok {
				return fmt.Errorf("%w: filter %s wants a string", ErrBadListRequest, f.Field.Name)
			}
			q.Where("? = ANY("+d.col(f.Field.Name)+")", v)
		case KindObject:
			b, err := json.Marshal(f.Value)
			if err != nil {
				return fmt.Errorf("%w: filter %s: %v", ErrBadListRequest, f.Field.Name, err)
			}
			q.Where(d.col(f.Field.Name)+" = ?::jsonb", string(b))
		default:
			q.Where(d.col(f.Field.Name)+" = ?", f.Value)
		}
	}
	if req.Search != "" {
		if len(d.search) == 0 {
			return fmt.Errorf("%w: %s has no search fields", ErrBadListRequest, d.resource)
		}
		pattern := "%" + EscapeLike(req.Search) + "%"
		parts := make([]string, len(d.search))
		args := make([]any, len(d.search))
		for i, f := range d.search {
			parts[i] = d.col(f.Name) + ` ILIKE ? ESCAPE '\'`
			args[i] = pattern
		}
		q.Where("("+strings.Join(parts, " OR ")+")", args...)
	}
	return nil
}
