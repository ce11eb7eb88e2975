package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// guideKinds are the columns of the template's "Field kinds per resource"
// table, by the kind of a field.
var guideKinds = map[storage.FieldKind]string{
	storage.KindInt: "integer", storage.KindInt32: "integer", storage.KindText: "string", storage.KindBool: "boolean",
	storage.KindDate: "date", storage.KindTime: "timestamp", storage.KindTextList: "list of strings", storage.KindObject: "object",
}

// TestAPIGuideListTables: the hand-written parts of the API guide's
// template (cmd/fleetapi/apiguide.md §6) that describe each list of the
// client API name every listed resource that has a GET route, from its
// descriptor: the routes sharing the list parameters, the row of its
// filter fields by kind ("Field kinds per resource") and the row of its
// search fields ("Search fields"). The generated parts follow the OpenAPI
// document by themselves; these do not, and nothing else notices a new
// resource missing from them, so the failure gives the row to write.
func TestAPIGuideListTables(t *testing.T) {
	b, err := os.ReadFile("apiguide.md")
	if err != nil {
		t.Fatal(err)
	}
	guide := string(b)
	start := strings.Index(guide, "\n## 6. ")
	end := strings.Index(guide, "\n## 7. ")
	if start < 0 || end < start {
		t.Fatal("apiguide.md has no §6 followed by §7")
	}
	lists := guide[start:end]
	intro, _, _ := strings.Cut(lists, "\n|")
	kinds := tableAfter(t, lists, "| Resource | integer |")
	search := tableAfter(t, lists, "| Resource | Search fields |")
	header := cells(kinds[0])
	fix := "\nthen regenerate docs/api.md: " + regenerateAPIGuide
	row := func(c []string) string { return strings.ReplaceAll("| "+strings.Join(c, " | ")+" |", "|  |", "| |") }
	checked := 0
	for _, d := range storage.Descriptors() {
		name := d.Table()
		if !d.Listed() || !slices.Contains(tenancy.Routes(), tenancy.Route{Method: "GET", Template: "/" + name}) {
			continue
		}
		checked++
		if !strings.Contains(intro, "`GET /"+name+"`") {
			t.Errorf("cmd/fleetapi/apiguide.md §6's opening sentence does not name `GET /%s` among the lists sharing its parameters: add it"+fix, name)
		}
		want := make([]string, len(header))
		want[0] = name
		filters := 0
		for _, f := range d.Fields() {
			if !f.Filter {
				continue
			}
			filters++
			col := slices.Index(header, guideKinds[f.Kind])
			if col < 0 {
				t.Fatalf("the kinds table has no column %q", guideKinds[f.Kind])
			}
			want[col] = strings.TrimPrefix(want[col]+", `"+f.Name+"`", ", ")
		}
		if filters > 0 {
			if got := rowOf(kinds, name); !slices.Equal(got, want) {
				t.Errorf("cmd/fleetapi/apiguide.md §6, \"Field kinds per resource\", says of %s %q, its descriptor's filters are %q: write the row\n\t%s%s",
					name, got, want, strings.ReplaceAll(row(want), "|  |", "| |"), fix)
			}
		}
		wantSearch := []string{name, "`" + strings.Join(d.SearchFields(), "`, `") + "`"}
		if len(d.SearchFields()) > 0 {
			if got := rowOf(search, name); len(got) != 2 || got[1] != wantSearch[1] {
				t.Errorf("cmd/fleetapi/apiguide.md §6, \"Search fields\", says of %s %q, its descriptor searches %s: write the row\n\t%s%s",
					name, got, wantSearch[1], row(wantSearch), fix)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no listed resource with a GET route")
	}
}

// tableAfter returns the rows of the Markdown table whose header line
// starts with header (the header first, the separator dropped).
func tableAfter(t *testing.T, text, header string) []string {
	t.Helper()
	i := strings.Index(text, "\n"+header)
	if i < 0 {
		t.Fatalf("apiguide.md §6 has no table %q", header)
	}
	var rows []string
	for j, line := range strings.Split(text[i+1:], "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if j != 1 {
			rows = append(rows, line)
		}
	}
	return rows
}

// cells splits a table row into its trimmed cells.
func cells(row string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(row), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// resourceCell is the resource a row names in its first cell
// ("objects (`/objects`, ...)" names objects).
var resourceCell = regexp.MustCompile(`^([a-z_]+)`)

// rowOf returns the cells of the row of resource, its first cell the
// resource's name, or nil.
func rowOf(rows []string, resource string) []string {
	for _, r := range rows[1:] {
		c := cells(r)
		if m := resourceCell.FindString(c[0]); m == resource {
			c[0] = m
			return c
		}
	}
	return nil
}
