package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// outsideRef matches a citation of a document a clone does not have: the
// design and the client spec the project was started from ("DESIGN §9",
// "spec §2.1", "the spec (§2.1)", also across a wrapped comment line), or
// their file names.
var outsideRef = regexp.MustCompile(`\b(?:DESIGN|spec)(?:\s*\n\s*(?://|#|--|\*)?)?\s*\(?§|DESIGN\.md|fleet-api-v2\.md`)

// docRef matches a citation of a section of the repository's own design or
// API guide: "docs/design.md §9", "docs/api.md §6", also across a wrapped
// comment line.
var docRef = regexp.MustCompile(`docs/(design|api)\.md(?:\s*\n\s*(?://|#|--|\*)?)?\s*§(\d+(?:\.\d+)*)`)

// docSection matches a numbered heading: "## §9. Management API" in
// design.md, "### 7.3 GET /services/due" in api.md.
var docSection = regexp.MustCompile(`(?m)^#{2,4} §?(\d+(?:\.\d+)*)[.\s]`)

// TestDesignReferences (issue 23 item 2): every reference to the design or
// the API in code, tests and documents points into the repository
// (docs/design.md §N, docs/api.md §N), to a section that exists there;
// none cites a document a clone does not have.
func TestDesignReferences(t *testing.T) {
	root := filepath.Join("..", "..")
	sections := map[string]map[string]bool{}
	for _, doc := range []string{"design", "api"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", doc+".md"))
		if err != nil {
			t.Fatal(err)
		}
		sections[doc] = map[string]bool{}
		for _, m := range docSection.FindAllSubmatch(b, -1) {
			sections[doc][string(m[1])] = true
		}
		if len(sections[doc]) < 9 {
			t.Fatalf("docs/%s.md: only %d numbered sections found", doc, len(sections[doc]))
		}
	}
	refs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && path != root && d.Name() != ".ci" {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !utf8.Valid(b) || strings.ContainsRune(string(b[:min(len(b), 8000)]), 0) {
			return nil // binary
		}
		rel, _ := filepath.Rel(root, path)
		text := string(b)
		if rel == filepath.Join("cmd", "fleetapi", "design_refs_test.go") {
			return nil // this file names the patterns
		}
		for _, loc := range outsideRef.FindAllStringIndex(text, -1) {
			t.Errorf("%s:%d: %q cites a document the repository does not have: cite docs/design.md §N or docs/api.md §N",
				rel, 1+strings.Count(text[:loc[0]], "\n"), text[loc[0]:loc[1]])
		}
		for _, m := range docRef.FindAllStringSubmatchIndex(text, -1) {
			refs++
			doc, sec := text[m[2]:m[3]], text[m[4]:m[5]]
			if !sections[doc][sec] {
				t.Errorf("%s:%d: docs/%s.md has no section §%s", rel, 1+strings.Count(text[:m[0]], "\n"), doc, sec)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs < 100 {
		t.Errorf("only %d references to docs/design.md and docs/api.md found: is the walk reading the repository?", refs)
	}
}
