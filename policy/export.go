package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// ExportModules writes the Rego modules of the policy set in dir (the
// embedded set for "") under out, with the generated module of the API
// routes (package fleet.api, data.fleet.api.routes) as RoutesModule, as
// this fleetapi generates it: the files an OPA server needs to answer the
// same decisions and scopes (`opa run --server out`). Test modules are
// left out. It returns the written paths, relative to out, in order.
func ExportModules(dir, out string) ([]string, error) {
	set, err := loadPolicySet(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for name := range set.modules {
		names = append(names, name)
	}
	sort.Strings(names)
	var written []string
	for _, name := range names {
		path := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return written, fmt.Errorf("export policy: %w", err)
		}
		if err := os.WriteFile(path, set.files[name], 0o644); err != nil {
			return written, fmt.Errorf("export policy: %w", err)
		}
		written = append(written, name)
	}
	return written, nil
}
