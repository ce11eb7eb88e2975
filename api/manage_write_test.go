package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOneOpeningForWrites holds issue 20 item 3: the opening of a write
// (no query, strict body, validation, the calling manager, idempotency,
// target) is written once. Only the opening itself may call the steps it
// runs; a handler that spells them out again fails here. The exceptions are
// named with their reason.
func TestOneOpeningForWrites(t *testing.T) {
	allowed := map[string][]string{
		// the opening of every write with a body
		"decodeBody": {"validBody",
			// reads the body twice: which keys the PATCH names
			"patchAccount",
			// the same for the writes of docs/design.md §15 (config_write.go)
			"change"},
		// the opening of a management write, and the one create that is
		// no management write (its Idempotency-Key hash has no route name)
		"idempotencyRequest": {"open", "postPassengers"},
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				callee := call.Fun
				if ix, ok := callee.(*ast.IndexExpr); ok { // decodeBody[T]
					callee = ix.X
				}
				id, ok := callee.(*ast.Ident)
				if !ok {
					return true
				}
				if callers, step := allowed[id.Name]; step && !slices.Contains(callers, fn.Name.Name) {
					t.Errorf("%s: %s calls %s; a write opens with managementWrite (or validBody), which runs it", fset.Position(call.Pos()), fn.Name.Name, id.Name)
				}
				return true
			})
		}
	}
}
