package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetapi/fleetapi/api"
)

// regenerateAPIGuide is the command that writes docs/api.md.
const regenerateAPIGuide = "go run ./cmd/fleetapi openapi --markdown > docs/api.md"

// TestAPIGuideCurrent (issue 23 item 3): docs/api.md is byte for byte what
// `fleetapi openapi --markdown` generates from the OpenAPI document and the
// error table, so it describes every operation and every error code.
func TestAPIGuideCurrent(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	want, err := apiGuide(doc, api.ErrorTable())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("docs/api.md is out of date with the OpenAPI document, the error table or cmd/fleetapi/apiguide.md; regenerate it from the repository root with\n\t%s", regenerateAPIGuide)
	}
}

// TestAPIGuideComplete: the generated guide has a section for every
// operation of the document and a row for every code of the error table,
// and the generator refuses a template whose error table lacks a code.
func TestAPIGuideComplete(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	codes := api.ErrorTable()
	out, err := apiGuide(doc, codes)
	if err != nil {
		t.Fatal(err)
	}
	guide := string(out)
	var d oaDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, items := range d.Paths {
		for method, raw := range items {
			var o oaOperation
			if json.Unmarshal(raw, &o) != nil || o.OperationID == "" {
				continue
			}
			n++
			if !strings.Contains(guide, " "+strings.ToUpper(method)+" "+path+"\n") {
				t.Errorf("docs/api.md has no section for %s %s", strings.ToUpper(method), path)
			}
		}
	}
	if n == 0 || strings.Count(guide, "\n### 7.") != n {
		t.Errorf("want %d operation sections, got %d", n, strings.Count(guide, "\n### 7."))
	}
	for _, c := range codes {
		if !strings.Contains(guide, "| `"+c.Code+"` |") {
			t.Errorf("docs/api.md §8 has no row for %s", c.Code)
		}
	}
	if _, err := apiGuide(doc, append(codes, api.ErrorCode{Code: "NO_SUCH_CODE", Status: 418})); err == nil || !strings.Contains(err.Error(), "NO_SUCH_CODE") {
		t.Errorf("a code missing from the template's error table: want an error naming it, got %v", err)
	}
}

// TestManagementDeniedReasonsDocumented (issue 34): the reasons of 403
// MANAGEMENT_DENIED that docs/api.md's error table (from
// cmd/fleetapi/apiguide.md) and docs/management.md's decision table list
// are exactly the reasons the policy's decisions emit (every deny(...) of
// policy/rego): wrong_target_type was missing from the guide.
func TestManagementDeniedReasonsDocumented(t *testing.T) {
	deny := regexp.MustCompile(`deny\(\s*"([a-z_]+)"`)
	emitted := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("..", "..", "policy", "rego"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".rego") || strings.HasSuffix(path, "_test.rego") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, m := range deny.FindAllStringSubmatch(string(b), -1) {
			emitted[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(emitted) < 5 {
		t.Fatalf("only %d reasons found in policy/rego: %v", len(emitted), emitted)
	}
	guide, err := os.ReadFile("apiguide.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| 403 \\| `MANAGEMENT_DENIED` \\|([^|]*)\\|").FindSubmatch(guide)
	if row == nil {
		t.Fatal("apiguide.md has no MANAGEMENT_DENIED row")
	}
	mgmt, err := os.ReadFile(filepath.Join("..", "..", "docs", "management.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []struct {
		name string
		list [][][]byte
	}{
		{"docs/api.md (apiguide.md's MANAGEMENT_DENIED row)", regexp.MustCompile("`([a-z]+_[a-z_]+)`").FindAllSubmatch(row[1], -1)},
		{"docs/management.md's decision rules", regexp.MustCompile("(?m)^\\| [0-9]+a? \\| `([a-z_]+)` \\|").FindAllSubmatch(mgmt, -1)},
	} {
		listed := map[string]bool{}
		for _, m := range doc.list {
			listed[string(m[1])] = true
		}
		for r := range emitted {
			if !listed[r] {
				t.Errorf("%s does not list the reason %s, which the policy emits", doc.name, r)
			}
		}
		for r := range listed {
			if !emitted[r] {
				t.Errorf("%s lists the reason %s, which the policy never emits", doc.name, r)
			}
		}
	}
}

// TestAPIGuideMethods (issue 34): the Methods row of docs/api.md's
// overview names exactly the methods of the OpenAPI document's
// operations, and HEAD (it said GET and POST after PATCH, PUT and DELETE
// were added).
func TestAPIGuideMethods(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	var d oaDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"HEAD": true}
	for _, items := range d.Paths {
		for method := range items {
			want[strings.ToUpper(method)] = true
		}
	}
	guide, err := os.ReadFile("apiguide.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| Methods \|(.*)\|$`).FindSubmatch(guide)
	if row == nil {
		t.Fatal("apiguide.md has no Methods row")
	}
	got := map[string]bool{}
	for _, m := range regexp.MustCompile("`(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)`").FindAllSubmatch(row[1], -1) {
		got[string(m[1])] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("the Methods row names %v, the document's operations use %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}
