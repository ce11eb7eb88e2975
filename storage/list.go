package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"go.opentelemetry.io/otel/trace"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/internal/paging"
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
	// Op is how the value bounds the field: FilterEqual (the zero value,
	// the exact-match filters) or, on the descriptor's range field
	// (Descriptor.RangeField) with a time.Time value, FilterFrom (field >=
	// value) or FilterTo (field < value).
	Op FilterOp
}

// FilterOp is the comparison of a Filter.
type FilterOp int

// The comparisons of a filter.
const (
	FilterEqual FilterOp = iota // field = value
	FilterFrom                  // field >= value (the list parameter from)
	FilterTo                    // field < value (the list parameter to)
)

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
	// After, when not nil, asks for the rows strictly after the cursor
	// (keyset paging) instead of skipping rows: Page must then be 1.
	After *Cursor
}

// The bounds of a page (docs/api.md §6), in one place: ListRequest and
// UsageRequest are checked against them (checkPage), and the api parses
// page and per_page within them and declares them in the OpenAPI
// document, so that a request the API takes is one storage takes, and
// nothing else does.
const (
	// MaxPerPage is the most rows a page holds; a page is allocated
	// per_page + 1 rows up front.
	MaxPerPage = 500
	// DefaultPerPage is a page's size when the request names none.
	DefaultPerPage = 50
	// MaxPage is the highest page number. With MaxPerPage, a page's
	// offset ((page-1) × per_page, plus the page and the row read to know
	// whether more follow) stays far within an int64.
	MaxPage = math.MaxInt32
)

// checkPage returns ErrBadListRequest for a page outside 1..MaxPage or a
// per_page outside 1..MaxPerPage.
func checkPage(page, perPage int) error {
	if page < 1 || page > MaxPage || perPage < 1 || perPage > MaxPerPage {
		return fmt.Errorf("%w: page %d, per page %d", ErrBadListRequest, page, perPage)
	}
	return nil
}

// check returns ErrBadListRequest for a page or per_page out of bounds
// (checkPage).
func (r ListRequest) check() error { return checkPage(r.Page, r.PerPage) }

// offset is the number of rows before the page: (page-1) × per_page.
func (r ListRequest) offset() int64 {
	return int64(r.Page-1) * int64(r.PerPage)
}

// Page is one page of a list and the total number of matching rows.
type Page[T any] struct {
	Items []T
	Total int64
	// Next is the cursor after the last item when more rows follow, nil
	// on the last page.
	Next *Cursor
}

// List returns the page of m's rows that scope admits and req selects:
// WHERE (scope) AND (filters) AND (search) ORDER BY sort, id LIMIT/OFFSET,
// or after req.After the rows strictly after the cursor (keyset.go) with
// no OFFSET; Page.Next is the cursor after the page when more rows follow.
// The total is that of every matching row (never of the rows after a
// cursor). The page's shape (walk, keyset, by key from kept ids, deferred
// join) and the total's source (the page, the row counters, a kept total,
// a count) are chosen by the paging layer's tables (paging.Rows,
// paging.Totals; docs/architecture.md, "Paging") and named on ctx's span
// (paging.Explain). The list of a tenant resource may run
// on a read replica (Store.WithReplicas); the lists under the management
// scope run on the primary. It returns policy.ErrScope for a
// scope of another resource or one storage cannot translate,
// ErrBadListRequest for a request the api should not have made, and
// ErrUnavailable when the database cannot be reached.
func List[T any](ctx context.Context, from Lister, scope policy.Scope, m Model[T], req ListRequest) (Page[T], error) {
	s := from.listStore()
	if err := req.check(); err != nil {
		return Page[T]{}, err
	}
	d := m.Descriptor
	// The scope's SQL, once per request: the page, the count and the
	// counters' total all come from it.
	c, err := s.compiledFor(scope, d.scopeOwner())
	if err != nil {
		return Page[T]{}, err
	}
	on := func(ctx context.Context, s *Store) (Page[T], error) {
		return listPage[T](ctx, d, req, s.listSource(d, c))
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

// listSource returns where List reads the rows of d that the compiled
// scope c of d's scope owner admits: the page and counting shapes of c,
// its counters and kept totals, and for a spread scope with counters
// (compiledScope.spread) what the facts of a page's shape are read from
// (spreadSource).
func (s *Store) listSource(d *Descriptor, c *compiledScope) listSource {
	spread := c.spread && c.counter != nil && d.scopedBy == ""
	src := listSource{
		start: func(model any, forCount bool) (*bun.SelectQuery, error) {
			if forCount {
				return s.selectIn(d, c.count, model), nil
			}
			return s.selectIn(d, c.page, model), nil
		},
		counted: func(ctx context.Context) (int64, bool, error) {
			return s.counterTotal(ctx, c, d)
		},
		kept: func(ctx context.Context, count *bun.SelectQuery, searched bool) (paging.Kept, bool, error) {
			return s.keptTotal(ctx, c, d, count, spread && searched && !s.off.KeptIDs)
		},
		off: s.off,
	}
	if spread {
		src.spread = &spreadSource{s: s, c: c, d: d}
	}
	return src
}

// listSource is where listPage reads a list from.
type listSource struct {
	// start begins the SELECT of the page (forCount false) or of the
	// count (true) with the rows' restriction; listPage adds the filters,
	// search, order and paging of the request (pageRows).
	start func(model any, forCount bool) (*bun.SelectQuery, error)
	// counted, when not nil, answers the fact Counters: the total of a
	// request without filters and search and true, or false when the rows
	// must be counted.
	counted func(context.Context) (int64, bool, error)
	// kept, when not nil, answers the fact KeepsTotals: the total of a
	// request with filters or search, given the count query and whether it
	// searches (Store.keptTotal; with the rows' ids for a search of spread
	// rows) and true, or false when the rows must be counted.
	kept func(ctx context.Context, count *bun.SelectQuery, searched bool) (paging.Kept, bool, error)
	// spread, when not nil, says that a page in id order walks the
	// table's primary key (compiledScope.spread) and reads the facts of
	// the page's shape.
	spread *spreadSource
	// off names the shapes switched off (Store.WithShapesOff).
	off paging.Off
}

// spreadSource reads, for the compiled scope c of d whose pages walk the
// table's key (compiledScope.spread, with a counter form), the facts
// paging.Rows asks of a page's shape.
type spreadSource struct {
	s *Store
	c *compiledScope
	d *Descriptor
}

// rows returns, in one statement, the number of rows of the list without
// filters and search, the table's estimated size and the version of the
// scope's rows (Store.spreadRows).
func (p *spreadSource) rows(ctx context.Context) (spreadRows, error) {
	return p.s.spreadRows(ctx, p.c, p.d)
}

// table returns the table's estimated size (Store.tableRows).
func (p *spreadSource) table(ctx context.Context) (int64, error) {
	return p.s.tableRows(ctx, p.d)
}

// keptIDs returns the total of count kept with its ids at the version
// *now, or at any version for nil, without counting (Store.keptIDs).
func (p *spreadSource) keptIDs(count *bun.SelectQuery, now *paging.Version) (paging.Kept, bool) {
	return p.s.keptIDs(p.c, p.d, count, now)
}

// byKey returns the shape that reads a page by key from the ids kept with
// k, at k's version (Store.sameVersion).
func (p *spreadSource) byKey(k paging.Kept) shape {
	return shape{total: k.Total, ids: k.IDs, current: p.s.sameVersion(p.c, k.Version)}
}

// keepsIDs reports whether the ids of a list of rows rows would be kept
// (paging.KeptIDsMax).
func (p *spreadSource) keepsIDs(rows int64) bool {
	return p.s.totals != nil && rows <= p.s.totals.MaxIDs
}

// withIDs returns the total of count with its ids at the version now,
// counting them when they are not kept (Store.keptAt).
func (p *spreadSource) withIDs(ctx context.Context, count *bun.SelectQuery, now paging.Version) (paging.Kept, bool, error) {
	return p.s.keptAt(ctx, p.c, p.d, count, true, now)
}

// shape is how listPage reads a page: what the row row of paging.Rows
// chose (docs/architecture.md, "Paging").
type shape struct {
	// row is the row of paging.Rows that chose the shape.
	row int
	// total is the list's total when it was read before the page, -1
	// otherwise.
	total int64
	// deferred reads the page as a deferred join (pageQuery).
	deferred bool
	// ids, when not nil, are the ids of all the list's rows in ascending
	// order, kept with its total (Store.keptTotal): the page's rows are
	// read by key, in the statement's snapshot only while current selects
	// a row (the version the ids were kept at: Store.sameVersion).
	ids     []int64
	current *bun.SelectQuery
}

// pageIDs returns the ids of the page req selects among sh.ids
// (paging.PageIDs).
func (sh shape) pageIDs(req ListRequest) []int64 {
	return paging.PageIDs(sh.ids, req.offset(), req.PerPage, req.Desc)
}

// pageFacts answers, for one choice of a page's shape and then of its
// total, the facts paging.Rows and paging.Totals ask (paging.Choose),
// reading what a fact needs when a row first asks for it, and keeps what
// it read for the shape (shape) and the total (listPage).
type pageFacts struct {
	ctx context.Context
	d   *Descriptor
	req ListRequest
	src listSource
	// peek lets the fact PeekIDs be asked (a request's first choice);
	// stale is the fact Stale.
	peek, stale bool
	facts       paging.Facts
	// count is the count statement of the request (countQuery).
	count *bun.SelectQuery
	// rows, table and now are the list's total, the table's estimate and
	// the version of the scope's rows, once read (haveRows).
	rows, table int64
	now         paging.Version
	haveRows    bool
	// kept is the kept total of a filtered list (KeepsTotals); ids the
	// kept ids a page read by key reads; counters the total of the row
	// counters (Counters).
	kept, ids paging.Kept
	counters  int64
}

// countQuery returns the request's count statement: the rows in the
// counting shape of the scope, the filters and the search, no columns.
func (p *pageFacts) countQuery() (*bun.SelectQuery, error) {
	if p.count != nil {
		return p.count, nil
	}
	count, err := p.src.start(reflect.Zero(reflect.PointerTo(p.d.model)).Interface(), true)
	if err != nil {
		return nil, err
	}
	if err := applyFilters(count, p.d, p.req); err != nil {
		return nil, err
	}
	p.count = count
	return count, nil
}

// filtered reports whether the request filters or searches.
func (p *pageFacts) filtered() bool { return len(p.req.Filters) > 0 || p.req.Search != "" }

// readRows reads rows, table and now of a spread list: without
// filters and search in one statement with the row counters, else from
// the kept total (read first: KeepsTotals) and the table's estimate.
func (p *pageFacts) readRows() error {
	if p.haveRows {
		return nil
	}
	if p.filtered() {
		table, err := p.src.spread.table(p.ctx)
		if err != nil {
			return err
		}
		p.rows, p.table, p.now = p.kept.Total, table, p.kept.Version
	} else {
		sp, err := p.src.spread.rows(p.ctx)
		if err != nil {
			return err
		}
		p.rows, p.table, p.now = sp.rows, sp.table, sp.version
	}
	p.haveRows = true
	return nil
}

// ask answers fact f (paging.Choose). The facts of the page (LastPage,
// EmptyFirst, Known) are set by listPage before the total's choice.
func (p *pageFacts) ask(f paging.Fact) (bool, error) {
	req, d := p.req, p.d
	switch f {
	case paging.Stale:
		return p.stale, nil
	case paging.Cursor:
		return req.After != nil, nil
	case paging.IDOrder:
		return req.Sort.Name == "" || req.Sort == d.id, nil
	case paging.Filtered:
		return p.filtered(), nil
	case paging.Spread:
		return p.src.spread != nil, nil
	case paging.KeepsTotals:
		if p.src.kept == nil {
			return false, nil
		}
		count, err := p.countQuery()
		if err != nil {
			return false, err
		}
		k, ok, err := p.src.kept(p.ctx, count, req.Search != "")
		p.kept = k
		return ok, err
	case paging.PeekIDs:
		if !p.peek {
			return false, nil
		}
		count, err := p.countQuery()
		if err != nil {
			return false, err
		}
		k, ok := p.src.spread.keptIDs(count, nil)
		if ok && req.offset() < k.Total {
			p.ids = k
			return true, nil
		}
		return false, nil
	case paging.IDsNow:
		if p.filtered() {
			// Asked after KeepsTotals: the ids came with the kept total.
			p.ids = p.kept
			return p.kept.IDs != nil, nil
		}
		if err := p.readRows(); err != nil {
			return false, err
		}
		count, err := p.countQuery()
		if err != nil {
			return false, err
		}
		k, ok := p.src.spread.keptIDs(count, &p.now)
		p.ids = k
		return ok, nil
	case paging.DeferCheaper:
		if err := p.readRows(); err != nil {
			return false, err
		}
		return paging.DeferPage(req.offset(), int64(req.PerPage)+1, p.rows, p.table), nil
	case paging.IDsRead:
		if err := p.readRows(); err != nil {
			return false, err
		}
		if !p.src.spread.keepsIDs(p.rows) {
			return false, nil
		}
		count, err := p.countQuery()
		if err != nil {
			return false, err
		}
		k, ok, err := p.src.spread.withIDs(p.ctx, count, p.now)
		p.ids = k
		return ok && k.IDs != nil, err
	case paging.Counters:
		if p.src.counted == nil {
			return false, nil
		}
		total, ok, err := p.src.counted(p.ctx)
		p.counters = total
		return ok, err
	}
	return false, fmt.Errorf("storage: paging fact %s is listPage's to set", f)
}

// choose chooses the page's shape (paging.Rows) and returns it with what
// its row read.
func (p *pageFacts) choose() (shape, error) {
	row, err := paging.Choose(paging.Rows, &p.facts, p.src.off, p.ask)
	if err != nil {
		return shape{total: -1}, err
	}
	r := paging.Rows[row]
	var sh shape
	if r.Shape == paging.ByKey {
		sh = p.src.spread.byKey(p.ids)
	} else {
		sh = shape{total: -1, deferred: r.Shape == paging.Deferred}
		if r.Total == paging.RowCounters || r.Total == paging.KeptTotal {
			sh.total = p.rows
		}
	}
	sh.row = row
	return sh, nil
}

// pageOf reads the page req selects among the rows of src in the shape
// sh: no row past a known total. whole is false when a page read by key
// came back with fewer rows than ids it asked for (counting the row read to
// know whether more follow): the version moved since the ids were kept (the
// statement then returns none), or a row left the list.
func pageOf[T any](ctx context.Context, d *Descriptor, req ListRequest, src listSource, sh shape) (items []T, next *Cursor, whole bool, err error) {
	offset := req.offset()
	if sh.total >= 0 && offset >= sh.total {
		// Past the total: no row to read (the walk would read every
		// entry of the table to find none).
		return []T{}, nil, true, nil
	}
	if items, next, err = pageRows[T](ctx, d, req, src.start, sh); err != nil {
		return nil, nil, false, err
	}
	if sh.ids == nil {
		return items, next, true, nil
	}
	n := len(items)
	if next != nil {
		n++
	}
	return items, next, n == len(sh.pageIDs(req)), nil
}

// listPage is List over the rows of src (listSource) that req selects,
// in the shape paging.Rows chooses, with the total paging.Totals chooses;
// both are named on ctx's span (paging.Explain).
func listPage[T any](ctx context.Context, d *Descriptor, req ListRequest, src listSource) (Page[T], error) {
	page, e, err := explainedPage[T](ctx, d, req, src)
	if err == nil {
		trace.SpanFromContext(ctx).SetAttributes(e.Attributes()...)
	}
	return page, err
}

// explainedPage is listPage, and the shape and total it chose.
func explainedPage[T any](ctx context.Context, d *Descriptor, req ListRequest, src listSource) (Page[T], paging.Explanation, error) {
	var none paging.Explanation
	if req.After != nil && req.Page != 1 {
		return Page[T]{}, none, fmt.Errorf("%w: a cursor with page %d", ErrBadListRequest, req.Page)
	}
	offset := req.offset()
	p := &pageFacts{ctx: ctx, d: d, req: req, src: src, peek: true}
	sh, err := p.choose()
	if err != nil {
		return Page[T]{}, none, err
	}
	items, next, whole, err := pageOf[T](ctx, d, req, src, sh)
	if err != nil {
		return Page[T]{}, none, err
	}
	if !whole {
		// The kept ids are of an earlier snapshot than the page's: the
		// version moved, or a row left the list (deleted, renamed out of
		// the search, moved out of the scope) between the version read
		// and the page, and a short page would pass for the last one.
		// Choose again from the version of this moment (the ids read
		// again if they are kept), and walk if that page is short too
		// (the fact Stale).
		for _, stale := range []bool{false, true} {
			p = &pageFacts{ctx: ctx, d: d, req: req, src: src, stale: stale}
			if sh, err = p.choose(); err != nil {
				return Page[T]{}, none, err
			}
			if items, next, whole, err = pageOf[T](ctx, d, req, src, sh); err != nil {
				return Page[T]{}, none, err
			}
			if whole || stale {
				break
			}
		}
	}
	// A page that is the last one tells the total without counting (not
	// after a cursor: the rows before it are not known).
	n := len(items)
	p.facts.Set(paging.LastPage, req.After == nil && n > 0 && next == nil)
	p.facts.Set(paging.EmptyFirst, n == 0 && req.Page == 1 && req.After == nil)
	p.facts.Set(paging.Known, sh.total >= 0)
	t, err := paging.Choose(paging.Totals, &p.facts, src.off, p.ask)
	if err != nil {
		return Page[T]{}, none, err
	}
	e := paging.Explain(sh.row, t)
	page := Page[T]{Items: items, Next: next}
	switch paging.Totals[t].Total {
	case paging.Page:
		page.Total = offset + int64(n)
	case paging.FromShape:
		page.Total = sh.total
	case paging.RowCounters:
		page.Total = p.counters
	case paging.KeptTotal:
		page.Total = p.kept.Total
	default:
		count, err := p.countQuery()
		if err != nil {
			return Page[T]{}, none, err
		}
		total, err := count.Count(ctx)
		if err != nil {
			return Page[T]{}, none, Translate(err)
		}
		page.Total = int64(total)
	}
	return page, e, nil
}

// pageRows returns the rows of the page req selects among those start
// admits (WHERE filters, search and, after a cursor, the keyset
// condition; ORDER BY sort, id; LIMIT per_page OFFSET (page-1)*per_page),
// and the cursor after its last row when more rows follow (one row more
// is read to know), in the shape sh (pageQuery).
func pageRows[T any](ctx context.Context, d *Descriptor, req ListRequest, start func(model any, forCount bool) (*bun.SelectQuery, error), sh shape) ([]T, *Cursor, error) {
	items := make([]T, 0, req.PerPage+1)
	q, sort, err := pageQuery(d, req, start, &items, sh)
	if err != nil {
		return nil, nil, err
	}
	if err := q.Scan(ctx); err != nil {
		return nil, nil, Translate(err)
	}
	if len(items) <= req.PerPage {
		return items, nil, nil
	}
	items = items[:req.PerPage]
	exact := func(ctx context.Context, id int64) (JSONObject, bool, error) {
		var text []string
		q, err := start((*T)(nil), true)
		if err != nil {
			return nil, false, err
		}
		if err := q.ColumnExpr(d.col(sort.Name)+"::text").Where(d.col(d.id.Name)+" = ?", id).Scan(ctx, &text); err != nil {
			return nil, false, Translate(err)
		}
		if len(text) != 1 {
			return nil, false, nil
		}
		obj, err := ParseJSONObject(text[0])
		return obj, err == nil, nil
	}
	next, err := cursorAfter(ctx, d, reflect.ValueOf(&items[len(items)-1]), sort, req.Desc, exact)
	if err != nil {
		return nil, nil, err
	}
	return items, next, nil
}

// pageQuery builds the page statement of pageRows into model (a pointer
// to a slice of rows): start's rows, filters, search, the keyset condition
// after req.After, ORDER BY sort, id, LIMIT per_page + 1 OFFSET
// (page-1)*per_page. It returns the sort field (the id field for none).
//
// A shape with ids, for a request in id order without a cursor, reads the
// rows of the page's ids (per_page + 1 of them from the page's offset, from
// the end when descending) by key, under the page shape of the scope, the
// filters and the search, and only while the version of the scope's rows
// is the ids' (EXISTS (shape.current)). A deferred shape reads the same page as a
// deferred join: the page's ids first, from the rows in the
// counting shape of the scope with the filters and search, ordered by
// id + 0 (an order no index delivers, so PostgreSQL finds all the rows —
// a manager's entries of the (account_id, id) index, a search's trigram
// matches — and keeps the top ones instead of walking the primary key),
// then those rows by key, still under the page shape of the scope, the
// filters and the search.
func pageQuery(d *Descriptor, req ListRequest, start func(model any, forCount bool) (*bun.SelectQuery, error), model any, sh shape) (*bun.SelectQuery, Field, error) {
	sort := req.Sort
	if sort.Name == "" {
		sort = d.id
	} else if f, ok := d.Field(sort.Name); !ok || f != req.Sort || !f.Sort {
		return nil, Field{}, fmt.Errorf("%w: sort by %q, not a sortable field of %s", ErrBadListRequest, sort.Name, d.resource)
	}
	q, err := start(model, false)
	if err != nil {
		return nil, Field{}, err
	}
	if err := applyFilters(q, d, req); err != nil {
		return nil, Field{}, err
	}
	if err := applyAfter(q, d, req, sort); err != nil {
		return nil, Field{}, err
	}
	dir := " ASC"
	if req.Desc {
		dir = " DESC"
	}
	q.OrderExpr(d.col(sort.Name) + dir)
	if sort.Name != d.id.Name {
		q.OrderExpr(d.col(d.id.Name) + dir)
	}
	offset := req.offset()
	if !sh.deferred && sh.ids == nil {
		q.Limit(int64(req.PerPage) + 1).Offset(offset)
		return q, sort, nil
	}
	if sort != d.id || req.After != nil {
		return nil, Field{}, fmt.Errorf("%w: a deferred page is in id order without a cursor", ErrBadListRequest)
	}
	if sh.ids != nil {
		q.Where(d.col(d.id.Name)+" = ANY(?)", pgdialect.Array(sh.pageIDs(req))).Limit(int64(req.PerPage) + 1)
		if sh.current != nil {
			q.Where("EXISTS (?)", sh.current)
		}
		return q, sort, nil
	}
	ids, err := start(reflect.Zero(reflect.PointerTo(d.model)).Interface(), true)
	if err != nil {
		return nil, Field{}, err
	}
	if err := applyFilters(ids, d, req); err != nil {
		return nil, Field{}, err
	}
	ids.ColumnExpr(d.col(d.id.Name)).
		OrderExpr(d.col(d.id.Name) + " + 0" + dir).
		Limit(int64(req.PerPage) + 1).Offset(offset)
	q.Where(d.col(d.id.Name)+" IN (?)", ids).Limit(int64(req.PerPage) + 1)
	return q, sort, nil
}

// applyFilters adds the exact-match filters and the search to q. Every
// value is bound; search escapes %, _ and \ so that they match themselves.
func applyFilters(q *bun.SelectQuery, d *Descriptor, req ListRequest) error {
	for _, f := range req.Filters {
		// A guard, not a parse: the api took the field from d, so only a
		// field of another resource (a programming error) fails here.
		if f.Op != FilterEqual {
			rf, ok := d.RangeField()
			t, isTime := f.Value.(time.Time)
			if !ok || rf != f.Field || !isTime || (f.Op != FilterFrom && f.Op != FilterTo) {
				return fmt.Errorf("%w: range %q, not the range field of %s", ErrBadListRequest, f.Field.Name, d.resource)
			}
			if f.Op == FilterFrom {
				q.Where(d.col(f.Field.Name)+" >= ?", t)
			} else {
				q.Where(d.col(f.Field.Name)+" < ?", t)
			}
			continue
		}
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
