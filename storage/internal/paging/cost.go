package paging

// deferFactor weighs the two shapes of a page of spread rows (DeferPage).
// Measured on the large preset (docs/performance.md, "Manager pages"): a
// primary-key entry the walk filters costs about twice what an entry of
// the (account_id, id) index costs the deferred join.
const deferFactor = 2

// DeferPage reports whether the page of rows spread over a table is read
// cheaper as a deferred join than by walking the primary key (the fact
// DeferCheaper). In id order the walk reads the table's keys until it has
// passed offset + limit of the rows, about (offset + limit) × table ÷ rows
// entries if the rows are spread evenly; the deferred join reads every one
// of the rows' entries in the (account_id, id) index, sorts their ids
// (top-N) and then reads the page's rows by key. It chooses the deferred
// join when the walk would read more than deferFactor times as many
// entries. An unknown or empty estimate (table ≤ 0, rows ≤ 0) keeps the
// walk.
func DeferPage(offset, limit, rows, table int64) bool {
	if rows <= 0 || table <= 0 {
		return false
	}
	walk := float64(offset+limit) * float64(table) / float64(rows)
	return walk > deferFactor*float64(rows)
}

// PageIDs returns the ids of the page at offset of perPage rows among ids
// (all the list's ids, ascending): perPage + 1 of them (the row read to
// know whether more follow) from the offset, from the end when desc, in
// ascending order, fewer on the last page.
func PageIDs(ids []int64, offset int64, perPage int, desc bool) []int64 {
	n := int64(len(ids))
	from, to := min(offset, n), min(offset+int64(perPage)+1, n)
	if desc {
		return ids[n-to : n-from]
	}
	return ids[from:to]
}
