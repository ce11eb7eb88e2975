package storage

import "slices"

// KeptTotals returns how many list totals s (and the Stores made from it)
// counted with their version, and how many it answered from a kept one
// (totals.go). It exists for the kept totals' tests.
func KeptTotals(s *Store) (counted, reused int64) {
	return s.totals.counted.Load(), s.totals.reused.Load()
}

// VersionedColumns returns the columns whose update must add to the
// changes of the counters of the counted table: account_id, the id (kept
// ids depend on it) and the columns its descriptor filters or searches,
// sorted.
func VersionedColumns(table string) []string {
	for _, d := range registry {
		if d.table != table || !d.counted {
			continue
		}
		out := []string{"account_id", d.id.Name}
		for _, f := range append([]Field{d.id}, d.fields...) {
			if (f.Filter || f.Search) && !slices.Contains(out, f.Name) {
				out = append(out, f.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	return nil
}

// SetKeptIDsMax sets the most ids s (and the Stores made from it) keeps
// with one total (keptIDsMax), so that a test can reach the deferred join
// with few rows.
func SetKeptIDsMax(s *Store, n int64) { s.totals.maxIDs = n }
