package policy

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

//go:embed rego
var embedded embed.FS

// policySet is a policy directory read into memory: every file by its
// slash-separated path relative to the directory.
type policySet struct {
	files map[string][]byte
	// modules are the parsed .rego files; tests are the *_test.rego ones.
	modules map[string]*ast.Module
	tests   map[string]*ast.Module
}

// loadPolicySet reads dir, or the embedded set when dir is "", parses its
// Rego modules as Rego v1 and adds the generated module of the API routes
// (routesModule).
func loadPolicySet(dir string) (*policySet, error) {
	var fsys fs.FS
	if dir == "" {
		sub, err := fs.Sub(embedded, "rego")
		if err != nil {
			return nil, err
		}
		fsys = sub
	} else {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("policy directory: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("policy directory %s: not a directory", dir)
		}
		fsys = os.DirFS(dir)
	}
	set := &policySet{
		files:   map[string][]byte{},
		modules: map[string]*ast.Module{},
		tests:   map[string]*ast.Module{},
	}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || strings.HasPrefix(path.Base(name), ".") {
			return nil
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		set.files[name] = src
		if path.Ext(name) != ".rego" {
			return nil
		}
		mod, err := ast.ParseModuleWithOpts(name, string(src), ast.ParserOptions{
			RegoVersion:       ast.RegoV1,
			ProcessAnnotation: true,
		})
		if err != nil {
			return err
		}
		if strings.HasSuffix(name, "_test.rego") {
			set.tests[name] = mod
		} else {
			set.modules[name] = mod
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	if len(set.modules) == 0 {
		return nil, fmt.Errorf("load policy: no .rego modules in %q", dirName(dir))
	}
	if err := set.addRoutesModule(); err != nil {
		return nil, err
	}
	return set, nil
}

// revision is the hex SHA-256 over every file of the set, names and
// contents, in name order.
func (s *policySet) revision() string {
	names := make([]string, 0, len(s.files))
	for n := range s.files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(s.files[n]))
		h.Write(s.files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// all returns the policy and test modules together.
func (s *policySet) all() map[string]*ast.Module {
	all := make(map[string]*ast.Module, len(s.modules)+len(s.tests))
	for n, m := range s.modules {
		all[n] = m
	}
	for n, m := range s.tests {
		all[n] = m
	}
	return all
}

func dirName(dir string) string {
	if dir == "" {
		return "embedded policy"
	}
	return dir
}
