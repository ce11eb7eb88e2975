package api_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestHandlersNameNoConcreteStore (issue 35 item 4): the api declares the
// store methods it calls (stores.go) and takes no *storage.Store: outside
// stores.go's check that the concrete store implements them, no non-test
// file of the package names storage.Store.
func TestHandlersNameNoConcreteStore(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		uses := 0
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "storage" {
					uses++
					if name != "stores.go" || uses > 1 {
						t.Errorf("%s: storage.Store named; declare the method in stores.go instead", fset.Position(sel.Pos()))
					}
				}
			}
			return true
		})
	}
}
