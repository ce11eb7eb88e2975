package paging

// Order is the order of a list for keyset paging (the shape Keyset):
// ORDER BY Col dir, ID dir, where Col is the sort's column (the id's when
// ByID), Nullable says that it may hold NULL, and Desc the direction.
type Order struct {
	Col, ID              string
	ByID, Nullable, Desc bool
}

// After returns the condition, and its arguments, of the rows strictly
// after the row whose sort value is value (bound with placeholder, a cast
// to the column's type; null for a NULL) and whose id is last, exactly as
// PostgreSQL orders them: NULLs after every value ascending and before
// every value descending. On a column that cannot be NULL the condition is
// one row comparison (sort, id) > (value, id), which an index on
// (sort, id) answers as an index condition.
func (k Order) After(value any, null bool, placeholder string, last int64) (string, []any) {
	cmp := " > "
	if k.Desc {
		cmp = " < "
	}
	if k.ByID {
		return k.ID + cmp + "?", []any{last}
	}
	if null {
		// After a NULL: ascending, only the NULLs of a greater id remain;
		// descending, the NULLs of a smaller id and every value.
		if k.Desc {
			return "(" + k.Col + " IS NOT NULL OR " + k.ID + " < ?)", []any{last}
		}
		return "(" + k.Col + " IS NULL AND " + k.ID + " > ?)", []any{last}
	}
	cond := "(" + k.Col + ", " + k.ID + ")" + cmp + "(" + placeholder + ", ?)"
	if k.Nullable && !k.Desc {
		// Ascending, the NULLs come after every value.
		cond = "(" + cond + " OR " + k.Col + " IS NULL)"
	}
	return cond, []any{value, last}
}
