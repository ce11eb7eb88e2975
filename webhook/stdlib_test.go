package webhook

import (
	"go/build"
	"strings"
	"testing"
)

// TestStdlibOnly keeps the package on the standard library (and the module
// itself): an import path whose first element has no dot is the standard
// library's. Test files are checked too.
func TestStdlibOnly(t *testing.T) {
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imps := range [][]string{bp.Imports, bp.TestImports, bp.XTestImports} {
		for _, imp := range imps {
			first, _, _ := strings.Cut(imp, "/")
			if strings.Contains(first, ".") && !strings.HasPrefix(imp, "github.com/fleetapi/fleetapi/") {
				t.Errorf("webhook imports %s: only the standard library is allowed", imp)
			}
		}
	}
}
