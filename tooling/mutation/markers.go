package mutation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// equivalentMarker is an equivalence marker, a comment in the module
// whose mutant it names: "# mutation: equivalent <id> <justification>".
var equivalentMarker = regexp.MustCompile(`^#\s*mutation:\s*equivalent\s+([0-9a-f]{12})\b\s*[:\-—]?\s*(.*)$`)

// equivalentMarkers reads the equivalence markers of the policy modules
// (of those named in files, when it is not empty): mutant id →
// justification.
func equivalentMarkers(modules map[string]*ast.Module, files []string) (map[string]string, error) {
	out := map[string]string{}
	for name, mod := range modules {
		if len(files) > 0 && !slices.Contains(files, name) {
			continue
		}
		for _, c := range mod.Comments {
			text := "#" + string(c.Text)
			if !strings.Contains(text, "mutation:") {
				continue
			}
			m := equivalentMarker.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: malformed mutation marker, want \"# mutation: equivalent <12-hex id> <why>\"", name, c.Location.Row)
			}
			if strings.TrimSpace(m[2]) == "" {
				return nil, fmt.Errorf("%s:%d: mutation marker %s without a justification", name, c.Location.Row, m[1])
			}
			out[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return out, nil
}
