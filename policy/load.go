package policy

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
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
	// bundleRevision is the manifest revision of the OPA bundle the set
	// was read from ("" for a directory, or a bundle without one).
	bundleRevision string
	// fromBundle is set for a set read from an OPA bundle; sequence is
	// its manifest's metadata.fleetapi_sequence (0: none), which orders
	// bundles (bundleOrder).
	fromBundle bool
	sequence   int64
	// routesFile is the set's own RoutesModule file as it was read (nil:
	// the set has none); the set evaluates the generated one in its place
	// (setRoutesModule).
	routesFile []byte
}

// loadPolicySet reads dir, or the embedded set when dir is "", parses its
// Rego modules as Rego v1 and sets the generated module of the API routes
// (setRoutesModule). dir may also name an OPA bundle file (loadPolicySource
// without signature verification).
func loadPolicySet(dir string) (*policySet, error) {
	return loadPolicySource(dir, nil)
}

// loadPolicySource reads a policy set from path: "" is the embedded set, a
// directory is read file by file, and a regular file is an OPA bundle
// (`opa build` output, .tar.gz) read with OPA's bundle package
// (loadPolicyBundle). verify, when not nil, is the key a bundle's
// .signatures.json must verify against; it applies to bundles only, and a
// directory or the embedded set with a key is an error (they carry no
// signature).
func loadPolicySource(path string, verify *BundleVerification) (*policySet, error) {
	if path == "" {
		if verify != nil {
			return nil, errors.New("load policy: a bundle verification key needs a bundle file, not the embedded policy")
		}
		sub, err := fs.Sub(embedded, "rego")
		if err != nil {
			return nil, err
		}
		return loadPolicyFS(sub, "")
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("policy source: %w", err)
	}
	switch {
	case st.IsDir():
		if verify != nil {
			return nil, fmt.Errorf("load policy %s: a bundle verification key needs a bundle file, not a directory", path)
		}
		return loadPolicyDir(path)
	case st.Mode().IsRegular():
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("policy bundle: %w", err)
		}
		defer f.Close()
		return loadPolicyBundle(f, path, verify)
	default:
		return nil, fmt.Errorf("policy source %s: neither a directory nor a bundle file", path)
	}
}

// loadPolicyFS reads the policy files of fsys (dir names it in errors).
func loadPolicyFS(fsys fs.FS, dir string) (*policySet, error) {
	files, err := readPolicyFiles(fsys)
	if err != nil {
		return nil, fmt.Errorf("load policy: %w", err)
	}
	return parsePolicyFiles(files, dir)
}

// parsePolicyFiles parses files (readPolicyFiles) into a policy set, in
// name order (dir names the source in errors).
func parsePolicyFiles(files map[string][]byte, dir string) (*policySet, error) {
	set := newPolicySet()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := set.addFile(name, files[name]); err != nil {
			return nil, fmt.Errorf("load policy: %w", err)
		}
	}
	return set.finish(dirName(dir))
}

// readPolicyFiles reads every file of a policy set from fsys, by its
// slash-separated path: every regular file under the root, except hidden
// ones. A file or directory whose name starts with "." is not part of the
// set, nor is anything below such a directory (an editor's swap file, a
// `.backup/` copy, `.git/`, a deployment's temporary file): it is not
// compiled, not tested and does not count towards the revision. Symbolic
// links below the root are not followed. This is the one definition of
// what a policy directory holds: loading, checking, testing, diffing and
// watching it all read it through here.
func readPolicyFiles(fsys fs.FS) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name != "." && hiddenName(name) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		files[name] = src
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// hiddenName reports whether the last element of the slash-separated name
// is hidden (starts with ".").
func hiddenName(name string) bool {
	return strings.HasPrefix(path.Base(name), ".")
}

func newPolicySet() *policySet {
	return &policySet{
		files:   map[string][]byte{},
		modules: map[string]*ast.Module{},
		tests:   map[string]*ast.Module{},
	}
}

// addFile records the file name of the set and, for a .rego file, parses
// it as Rego v1 among the modules or the tests.
func (s *policySet) addFile(name string, src []byte) error {
	s.files[name] = src
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
		s.tests[name] = mod
	} else {
		s.modules[name] = mod
	}
	return nil
}

// finish checks that the set has modules and none of its own in package
// fleet.api (the generated routes' package) other than the routes file
// RoutesModule, then sets the generated routes module in its place.
func (s *policySet) finish(source string) (*policySet, error) {
	if len(s.modules) == 0 {
		return nil, fmt.Errorf("load policy: no .rego modules in %q", source)
	}
	apiPkg := ast.MustParseRef("data.fleet.api")
	routes := ""
	for _, name := range slices.Sorted(maps.Keys(s.modules)) {
		isAPI := s.modules[name].Package.Path.Equal(apiPkg)
		switch {
		case IsRoutesModule(name) && !isAPI:
			return nil, fmt.Errorf("load policy %s: %s must declare package fleet.api (the routes file fleetapi generates), not %s", source, name, s.modules[name].Package.Path)
		case IsRoutesModule(name) && routes != "":
			return nil, fmt.Errorf("load policy %s: two routes files, %s and %s", source, routes, name)
		case IsRoutesModule(name):
			routes = name
		case isAPI:
			return nil, fmt.Errorf("load policy %s: module %s declares package fleet.api, which fleetapi generates (data.fleet.api.routes from its routes, the file %s): remove it from the set", source, name, RoutesModule)
		}
	}
	if routes == "" {
		routes = RoutesModule
	}
	if err := s.setRoutesModule(routes); err != nil {
		return nil, err
	}
	return s, nil
}

// revision names the set: the hex SHA-256 over every file of the set,
// names and contents, in name order (filesHash), prefixed with the
// bundle's manifest revision and "@" for a bundle that has one.
func (s *policySet) revision() string {
	sum := s.filesHash()
	if s.bundleRevision != "" {
		return s.bundleRevision + "@" + sum
	}
	return sum
}

// filesHash is the hex SHA-256 over every file of the set, names and
// contents, in name order.
func (s *policySet) filesHash() string {
	return filesHash(s.files)
}

// filesHash is the hex SHA-256 over files, names and contents, in name
// order.
func filesHash(files map[string][]byte) string {
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
		h.Write(files[n])
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
