package paging

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
)

// Fact is one yes-or-no question a row of the decision table asks about a
// list request, its scope, the kept totals and ids, or the page read. The
// caller answers it (Choose's ask) only when a row needs it, so that a
// fact that costs a statement (the row counters, a kept total) is read
// only when the rows before have not decided.
type Fact uint8

// The facts, by what they ask about.
const (
	// Stale (request): a page read by key came back short at the first
	// and the second choice of one request: rows moved under the ids.
	Stale Fact = iota
	// Cursor (request): the rows after a cursor (keyset paging).
	Cursor
	// IDOrder (request): sorted by the id, or by nothing.
	IDOrder
	// Filtered (request): filters or a search.
	Filtered
	// Spread (scope): the scope's pages walk the table's primary key (a
	// manager's tree, the admin: storage's compiledScope.spread), the
	// scope has a counter form, and the rows are the resource's own.
	Spread
	// KeepsTotals (scope and cache): the totals of the scope are kept (a
	// counter form, the resource's own rows, statements on a pool).
	// Answering it for a filtered list reads the kept total, counting it
	// (with its ids for a search of spread rows) when it is not kept at
	// the version of this moment.
	KeepsTotals
	// PeekIDs (cache): the list's ids are kept, at any version, and the
	// page's offset is within them; asked at a request's first choice
	// only (the page statement checks the version: SameVersion).
	PeekIDs
	// IDsNow (cache): the list's ids are kept at the version of this
	// moment: without filters read with the row counters' total and the
	// table's estimate in one statement, else with the kept total.
	IDsNow
	// DeferCheaper (cost): DeferPage with the list's total and the
	// table's estimate.
	DeferCheaper
	// IDsRead (cache): the list has at most MaxIDs rows and its ids were
	// read and kept with its total now (a deferred join reads every id
	// anyway).
	IDsRead
	// LastPage (page): the page read, not after a cursor, holds rows and
	// no more follow: its total is its offset plus its rows.
	LastPage
	// EmptyFirst (page): page 1, not after a cursor, came back empty.
	EmptyFirst
	// Known (page): the shape's row read the total before the page.
	Known
	// Counters (scope): the scope has a counter form, and the row
	// counters hold the total of the list without filters and search.
	Counters

	numFacts
)

var factNames = [numFacts]string{"stale", "cursor", "id_order", "filtered", "spread", "keeps_totals",
	"peek_ids", "ids_now", "defer_cheaper", "ids_read", "last_page", "empty_first", "known", "counters"}

func (f Fact) String() string {
	if f < numFacts {
		return factNames[f]
	}
	return fmt.Sprintf("fact %d", f)
}

// Shape is how a page is read.
type Shape string

// The shapes.
const (
	// Walk: WHERE scope, filters, search ORDER BY sort, id LIMIT OFFSET.
	Walk Shape = "walk"
	// Keyset: the same after a cursor, with no OFFSET (storage's
	// applyAfter).
	Keyset Shape = "keyset"
	// ByKey: the page's ids from the list's kept ids (PageIDs), the rows
	// by key while the version is the ids' (SameVersion).
	ByKey Shape = "ids"
	// Deferred: the page's ids from the counting shape of the scope in an
	// order no index delivers (id + 0), then the rows by key.
	Deferred Shape = "deferred"
)

// TotalSource is where a page's total comes from.
type TotalSource string

// The sources. AfterPage and FromShape are the table's, never Explain's.
const (
	// Page: the page tells it (LastPage: offset + rows; EmptyFirst: 0).
	Page TotalSource = "page"
	// RowCounters: the sum of the scope's row counters.
	RowCounters TotalSource = "counters"
	// KeptTotal: the kept total of the filters and search (Cache.Keep).
	KeptTotal TotalSource = "kept"
	// KeptIDs: the total kept with the ids the page was read from.
	KeptIDs TotalSource = "kept_ids"
	// Count: count(*) of the list's rows.
	Count TotalSource = "count"
	// AfterPage (Rows): the total is chosen after the page (Totals).
	AfterPage TotalSource = "after_page"
	// FromShape (Totals): the source the shape's row read it from.
	FromShape TotalSource = "from_shape"
)

// Cond is one condition of a row: Fact answered Is.
type Cond struct {
	Fact Fact
	Is   bool
}

func is(f Fact) Cond  { return Cond{f, true} }
func not(f Fact) Cond { return Cond{f, false} }

// Row is one row of a decision table: when its conditions all hold, in
// the order they are asked, and no row before holds, it decides.
type Row struct {
	When  []Cond
	Shape Shape
	Total TotalSource
	// Why says in a few words what the row is for (docs, test names).
	Why string
}

// Rows is the decision table of a page's shape (docs/architecture.md,
// "Paging"): the first row whose conditions hold decides the shape, and
// the total's source when the shape reads it before the page. The last
// row holds always.
var Rows = []Row{
	{[]Cond{is(Stale)}, Walk, AfterPage, "ids moved twice under one request: walk"},
	{[]Cond{is(Cursor)}, Keyset, AfterPage, "after a cursor"},
	{[]Cond{not(IDOrder)}, Walk, AfterPage, "another sort: its index or a sort"},
	{[]Cond{not(Spread)}, Walk, AfterPage, "rows an index returns in order (one account's, a user's)"},
	{[]Cond{is(PeekIDs)}, ByKey, KeptIDs, "ids kept, checked by the page statement"},
	{[]Cond{not(Filtered), is(IDsNow)}, ByKey, KeptIDs, "ids kept at the counters' version"},
	{[]Cond{is(Filtered), not(KeepsTotals)}, Walk, AfterPage, "no kept total (a transaction)"},
	{[]Cond{is(Filtered), is(IDsNow)}, ByKey, KeptIDs, "ids kept (or counted) with the kept total"},
	{[]Cond{not(Filtered), not(DeferCheaper)}, Walk, RowCounters, "a short walk, total from the counters"},
	{[]Cond{is(Filtered), not(DeferCheaper)}, Walk, KeptTotal, "a short walk, total kept"},
	{[]Cond{is(IDsRead)}, ByKey, KeptIDs, "a long walk over few rows: their ids read instead"},
	{[]Cond{not(Filtered)}, Deferred, RowCounters, "a long walk over many rows"},
	{nil, Deferred, KeptTotal, "a long walk over many filtered rows"},
}

// Totals is the decision table of a page's total, chosen after the page
// when the page or the shape's row may tell it. The last row holds
// always.
var Totals = []Row{
	{[]Cond{is(LastPage)}, "", Page, "the last page: offset + rows"},
	{[]Cond{is(EmptyFirst)}, "", Page, "an empty first page: 0"},
	{[]Cond{is(Known)}, "", FromShape, "read with the shape"},
	{[]Cond{not(Filtered), is(Counters)}, "", RowCounters, "the row counters"},
	{[]Cond{is(Filtered), is(KeepsTotals)}, "", KeptTotal, "the kept total"},
	{nil, "", Count, "count(*)"},
}

// Facts are the answers a choice has had so far.
type Facts struct{ known, yes uint32 }

// Set records fact's answer.
func (f *Facts) Set(fact Fact, v bool) {
	f.known |= 1 << fact
	if v {
		f.yes |= 1 << fact
	} else {
		f.yes &^= 1 << fact
	}
}

// Get returns fact's answer and whether it has one.
func (f Facts) Get(fact Fact) (v, known bool) {
	return f.yes&(1<<fact) != 0, f.known&(1<<fact) != 0
}

// switchedOff reports whether off answers fact No: a shape switched off is
// never chosen, and the next row that holds decides.
func (o Off) switchedOff(fact Fact) bool {
	switch fact {
	case DeferCheaper:
		return o.Deferred
	case PeekIDs, IDsNow, IDsRead:
		return o.KeptIDs || o.KeptTotals
	case KeepsTotals:
		return o.KeptTotals
	}
	return false
}

// Choose returns the index of the first row of table whose conditions
// hold. It asks ask each fact a row needs that facts has no answer for, in
// the order of the rows and their conditions, and records the answers in
// facts; a fact off switches off is answered No without asking. It
// returns ask's error, and an error for a table whose last row does not
// hold.
func Choose(table []Row, facts *Facts, off Off, ask func(Fact) (bool, error)) (int, error) {
rows:
	for i, r := range table {
		for _, c := range r.When {
			v, known := facts.Get(c.Fact)
			if !known {
				if off.switchedOff(c.Fact) {
					v = false
				} else {
					var err error
					if v, err = ask(c.Fact); err != nil {
						return 0, err
					}
				}
				facts.Set(c.Fact, v)
			}
			if v != c.Is {
				continue rows
			}
		}
		return i, nil
	}
	return 0, fmt.Errorf("paging: no row of the table holds")
}

// Explanation names what a page was read with: its shape, its total's
// source, and the rows of Rows and Totals that chose them.
type Explanation struct {
	Shape    Shape
	Total    TotalSource
	Row      int
	TotalRow int
}

// The attributes of a list's span (Explanation.Attributes).
const (
	AttrShape       = attribute.Key("fleet.paging.shape")
	AttrTotalSource = attribute.Key("fleet.paging.total_source")
)

// Explain returns the shape of row (of Rows) and the source of the total
// that totalRow (of Totals) chose, by name.
func Explain(row, totalRow int) Explanation {
	e := Explanation{Shape: Rows[row].Shape, Total: Totals[totalRow].Total, Row: row, TotalRow: totalRow}
	if e.Total == FromShape {
		e.Total = Rows[row].Total
	}
	return e
}

// Attributes returns e as the attributes of the list's span.
func (e Explanation) Attributes() []attribute.KeyValue {
	return []attribute.KeyValue{AttrShape.String(string(e.Shape)), AttrTotalSource.String(string(e.Total))}
}
