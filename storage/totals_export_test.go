package storage

import (
	"slices"
)

// KeptTotals returns how many list totals s (and the Stores made from it)
// counted with their version, and how many it answered from a kept one
// (totals.go). It exists for the kept totals' tests.
func KeptTotals(s *Store) (counted, reused int64) {
	return s.totals.Counted.Load(), s.totals.Reused.Load()
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
// with one total (paging.KeptIDsMax), so that a test can reach the
// deferred join with few rows.
func SetKeptIDsMax(s *Store, n int64) { s.totals.MaxIDs = n }

// SetKeptTotalsBytes sets the bytes the kept totals of s (and of the
// Stores made from it) may hold (paging.CacheBytes), so that a test fills
// them with few lists.
func SetKeptTotalsBytes(s *Store, n int) { s.totals.SetMaxBytes(n) }

// KeptTotalsHeld returns the bytes the kept totals of s account for, and
// how many entries each tenant holds, by the tenant's hash.
func KeptTotalsHeld(s *Store) (bytes int, entries map[string]int) { return s.totals.Held() }
