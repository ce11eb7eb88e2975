package paging

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// markdown renders a decision table as docs/architecture.md shows it.
func markdown(table []Row, shapes bool) string {
	var b strings.Builder
	if shapes {
		b.WriteString("| row | when (asked in this order) | shape | total | why |\n|---|---|---|---|---|\n")
	} else {
		b.WriteString("| row | when (asked in this order) | total | why |\n|---|---|---|---|\n")
	}
	for i, r := range table {
		var when []string
		for _, c := range r.When {
			if c.Is {
				when = append(when, "`"+c.Fact.String()+"`")
			} else {
				when = append(when, "not `"+c.Fact.String()+"`")
			}
		}
		if len(when) == 0 {
			when = []string{"always"}
		}
		if shapes {
			fmt.Fprintf(&b, "| %d | %s | `%s` | `%s` | %s |\n", i, strings.Join(when, ", "), r.Shape, r.Total, r.Why)
		} else {
			fmt.Fprintf(&b, "| %d | %s | `%s` | %s |\n", i, strings.Join(when, ", "), r.Total, r.Why)
		}
	}
	return b.String()
}

// TestArchitectureShowsTheTables: docs/architecture.md's "Paging" holds
// both decision tables as the code declares them; a failure prints them.
func TestArchitectureShowsTheTables(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"paging.Rows": markdown(Rows, true), "paging.Totals": markdown(Totals, false)} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/architecture.md does not show %s as declared; it is:\n%s", name, want)
		}
	}
}
