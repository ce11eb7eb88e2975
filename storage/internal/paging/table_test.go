package paging

import (
	"errors"
	"fmt"
	"testing"
)

// choose runs Choose over table with the facts of bits (fact f is Yes
// when bit f is set) and returns the row and the facts it asked.
func choose(t *testing.T, table []Row, bits uint32, off Off) (int, []Fact) {
	t.Helper()
	var facts Facts
	var asked []Fact
	row, err := Choose(table, &facts, off, func(f Fact) (bool, error) {
		asked = append(asked, f)
		return bits&(1<<f) != 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return row, asked
}

// holds reports whether every condition of r holds for bits.
func holds(r Row, bits uint32) bool {
	for _, c := range r.When {
		if (bits&(1<<c.Fact) != 0) != c.Is {
			return false
		}
	}
	return true
}

// TestEveryRow walks the decision tables over every combination of the
// facts: the row chosen is the first that holds, each fact is asked at
// most once, every row is chosen by some combination (none is dead), the
// last row holds always, and the rows are consistent (a page read by key
// reads its total with the ids, a deferred join with the counters or the
// kept total, only a walk or a keyset page leaves the total for after the
// page). Each row is then explained by name.
func TestEveryRow(t *testing.T) {
	for name, table := range map[string][]Row{"Rows": Rows, "Totals": Totals} {
		if last := table[len(table)-1]; len(last.When) != 0 {
			t.Errorf("%s: the last row %q has conditions: a request could match none", name, last.Why)
		}
		witness := make([]int64, len(table))
		for i := range witness {
			witness[i] = -1
		}
		for bits := uint32(0); bits < 1<<numFacts; bits++ {
			row, asked := choose(t, table, bits, Off{})
			for i := range row {
				if holds(table[i], bits) {
					t.Fatalf("%s, facts %b: chose row %d, but row %d holds", name, bits, row, i)
				}
			}
			if !holds(table[row], bits) {
				t.Fatalf("%s, facts %b: chose row %d, which does not hold", name, bits, row)
			}
			seen := map[Fact]bool{}
			for _, f := range asked {
				if seen[f] {
					t.Fatalf("%s, facts %b: asked %s twice", name, bits, f)
				}
				seen[f] = true
			}
			if witness[row] < 0 {
				witness[row] = int64(bits)
			}
		}
		for i, r := range table {
			t.Run(fmt.Sprintf("%s/%d %s", name, i, r.Why), func(t *testing.T) {
				if witness[i] < 0 {
					t.Fatalf("no combination of facts chooses it: a dead row")
				}
				if name == "Totals" {
					if r.Shape != "" || r.Total == AfterPage {
						t.Errorf("a row of Totals with shape %q, total %q", r.Shape, r.Total)
					}
					return
				}
				switch {
				case r.Shape == ByKey && r.Total != KeptIDs,
					r.Shape == Deferred && r.Total != RowCounters && r.Total != KeptTotal,
					r.Total == AfterPage && r.Shape != Walk && r.Shape != Keyset,
					r.Total == FromShape || r.Total == Page:
					t.Errorf("shape %s with total %s", r.Shape, r.Total)
				}
				// Explained by name, with the total's rows: read with the
				// shape when it was, else the source chosen after the page.
				e := Explain(i, 2)
				if e.Shape != r.Shape || (r.Total != AfterPage && e.Total != r.Total) {
					t.Errorf("Explain(%d, known) = %+v, want shape %s, total %s", i, e, r.Shape, r.Total)
				}
				if e := Explain(i, len(Totals)-1); e.Total != Count {
					t.Errorf("Explain(%d, count) = %+v", i, e)
				}
			})
		}
	}
}

// TestChooseAsksOnlyWhatDecides: a list that is not spread, sorted by
// another field or after a cursor is decided by the request and the scope
// alone: no fact of the cache or the cost (a statement each) is asked for
// its shape.
func TestChooseAsksOnlyWhatDecides(t *testing.T) {
	cheap := map[Fact]bool{Stale: true, Cursor: true, IDOrder: true, Spread: true, Filtered: true}
	for bits := uint32(0); bits < 1<<numFacts; bits++ {
		if bits&(1<<Spread) != 0 && bits&(1<<IDOrder) != 0 && bits&(1<<Cursor) == 0 {
			continue
		}
		_, asked := choose(t, Rows, bits, Off{})
		for _, f := range asked {
			if !cheap[f] {
				t.Fatalf("facts %b: asked %s", bits, f)
			}
		}
	}
}

// TestOff: a switched-off shape is never chosen, its facts are never
// asked, and the next row decides.
func TestOff(t *testing.T) {
	cases := []struct {
		names   string
		off     Off
		never   []Fact
		noShape Shape
		noTotal TotalSource
	}{
		{"deferred", Off{Deferred: true}, []Fact{DeferCheaper}, Deferred, ""},
		{"kept_ids", Off{KeptIDs: true}, []Fact{PeekIDs, IDsNow, IDsRead}, ByKey, KeptIDs},
		{"kept_totals", Off{KeptTotals: true}, []Fact{KeepsTotals, PeekIDs, IDsNow, IDsRead}, ByKey, KeptTotal},
	}
	for _, tc := range cases {
		t.Run(tc.names, func(t *testing.T) {
			off, err := ParseOff(tc.names)
			if err != nil || off != tc.off {
				t.Fatalf("ParseOff(%q) = %+v, %v", tc.names, off, err)
			}
			for bits := uint32(0); bits < 1<<numFacts; bits++ {
				for _, table := range [][]Row{Rows, Totals} {
					row, asked := choose(t, table, bits, off)
					for _, f := range asked {
						for _, n := range tc.never {
							if f == n {
								t.Fatalf("facts %b: asked %s", bits, f)
							}
						}
					}
					if r := table[row]; r.Shape != "" && r.Shape == tc.noShape || r.Total == tc.noTotal {
						t.Fatalf("facts %b: chose %q", bits, r.Why)
					}
				}
			}
		})
	}
	if _, err := ParseOff("deferred,keyset"); err == nil {
		t.Error("ParseOff took keyset, which cannot be switched off")
	}
}

// TestChooseReturnsAskError: the error of a fact's statement is the
// choice's.
func TestChooseReturnsAskError(t *testing.T) {
	boom := errors.New("boom")
	var facts Facts
	_, err := Choose(Rows, &facts, Off{}, func(f Fact) (bool, error) {
		if f == IDsNow {
			return false, boom
		}
		return f == IDOrder || f == Spread, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Choose = %v, want boom", err)
	}
}
