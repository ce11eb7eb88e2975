package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
