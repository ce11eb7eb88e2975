package policy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// testKeys is an RSA key pair in PEM: the private key signs bundles
// (bundle.GenerateSignature, as `opa build --signing-key` does), the
// public key file verifies them.
type testKeys struct {
	private   string
	public    string
	publicPEM string // path of the public key file
}

func newTestKeys(t testing.TB) testKeys {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	keys := testKeys{
		private: string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})),
		public:  string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})),
	}
	keys.publicPEM = filepath.Join(t.TempDir(), "bundle.pub.pem")
	if err := os.WriteFile(keys.publicPEM, []byte(keys.public), 0o600); err != nil {
		t.Fatal(err)
	}
	return keys
}

// verification returns the verification of bundles signed with k's
// private key (LoadBundleVerification of its public key file).
func (k testKeys) verification(t testing.TB) *BundleVerification {
	t.Helper()
	v, err := LoadBundleVerification(k.publicPEM)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// embeddedRego returns the .rego files of the embedded set by path.
func embeddedRego(t testing.TB) map[string]string {
	t.Helper()
	files := map[string]string{}
	sub, err := fs.Sub(embedded, "rego")
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(name) != ".rego" {
			return err
		}
		b, err := fs.ReadFile(sub, name)
		files[name] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// buildBundle writes the Rego files as an OPA bundle with OPA's bundle
// writer (the format of `opa build -b`), with the manifest revision
// revision, signed with the PEM private key signingKey unless it is "".
func buildBundle(t testing.TB, files map[string]string, revision, signingKey string) []byte {
	t.Helper()
	return writeBundle(t, buildBundleParts(t, files, revision, signingKey))
}

// buildBundleParts is the bundle of buildBundle before it is written.
//
// Each bundle carries the next sequence (SequenceKey) of the test binary:
// a bundle built later is newer, as in a release pipeline.
func buildBundleParts(t testing.TB, files map[string]string, revision, signingKey string) bundle.Bundle {
	t.Helper()
	return buildBundleSeq(t, files, revision, signingKey, bundleSequence.Add(1))
}

// bundleSequence numbers the bundles the tests build.
var bundleSequence atomic.Int64

// buildBundleSeq is buildBundleParts with the given sequence (0: none).
func buildBundleSeq(t testing.TB, files map[string]string, revision, signingKey string, seq int64) bundle.Bundle {
	t.Helper()
	b := bundle.Bundle{
		Manifest: bundle.Manifest{Revision: revision, Roots: &[]string{"fleet"}},
		Data:     map[string]any{},
	}
	if seq != 0 {
		b.Manifest.Metadata = map[string]any{SequenceKey: seq}
	}
	for name, src := range files {
		b.Modules = append(b.Modules, moduleFile(name, src))
	}
	if signingKey != "" {
		if err := b.GenerateSignature(bundle.NewSigningConfig(signingKey, "RS256", ""), DefaultBundleKeyID, false); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func moduleFile(name, src string) bundle.ModuleFile {
	return bundle.ModuleFile{URL: "/" + name, Path: "/" + name, Raw: []byte(src)}
}

func writeBundle(t testing.TB, b bundle.Bundle) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.Write(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadPolicySourceBundle: a bundle file of the embedded set loads the
// same modules and tests as the embedded set, and its revision is the
// manifest revision and the hash of its files.
func TestLoadPolicySourceBundle(t *testing.T) {
	want, err := loadPolicySet("")
	if err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "fleet.tar.gz", buildBundle(t, embeddedRego(t), "v42", ""))
	got, err := loadPolicySource(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.modules) != len(want.modules) || len(got.tests) != len(want.tests) {
		t.Fatalf("bundle: %d modules %d tests, embedded %d %d", len(got.modules), len(got.tests), len(want.modules), len(want.tests))
	}
	for name := range want.modules {
		if got.modules[name] == nil {
			t.Errorf("bundle lacks module %s", name)
		}
	}
	if got.modules[RoutesModule] == nil {
		t.Error("bundle set lacks the generated routes module")
	}
	rev := got.revision()
	if !strings.HasPrefix(rev, "v42@") || len(rev) != len("v42@")+64 {
		t.Errorf("revision %q: want v42@<sha256>", rev)
	}
	other, err := loadPolicySource(writeTemp(t, "b.tar.gz", buildBundle(t, embeddedRego(t), "v43", "")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if other.revision() == rev {
		t.Error("another manifest revision, same set revision")
	}
	// The same bundle with one policy byte changed is another revision.
	files := embeddedRego(t)
	files["fleet/authz/authz.rego"] += "\n# changed\n"
	changed, err := loadPolicySource(writeTemp(t, "c.tar.gz", buildBundle(t, files, "v42", "")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if changed.revision() == rev {
		t.Error("a changed module, same set revision")
	}
}

// TestBundleSignatures: with a verification key, only a bundle signed by
// its private key, unchanged since, loads; without one, a signature is not
// required.
func TestBundleSignatures(t *testing.T) {
	keys := newTestKeys(t)
	wrong := newTestKeys(t)
	verify := keys.verification(t)
	files := embeddedRego(t)
	signed := buildBundle(t, files, "r1", keys.private)

	if _, err := loadPolicySource(writeTemp(t, "ok.tar.gz", signed), verify); err != nil {
		t.Fatalf("signed bundle refused: %v", err)
	}
	if _, err := loadPolicySource(writeTemp(t, "ok.tar.gz", signed), nil); err != nil {
		t.Fatalf("signed bundle without a key refused: %v", err)
	}

	// Tampered: signed, then a module changed (the signed hashes are
	// kept: the signature of the original files goes into the new tarball).
	b := bundle.Bundle{Manifest: bundle.Manifest{Revision: "r1", Roots: &[]string{"fleet"}}, Data: map[string]any{}}
	for name, src := range files {
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: "/" + name, Path: "/" + name, Raw: []byte(src)})
	}
	if err := b.GenerateSignature(bundle.NewSigningConfig(keys.private, "RS256", ""), DefaultBundleKeyID, false); err != nil {
		t.Fatal(err)
	}
	for i := range b.Modules {
		if b.Modules[i].Path == "/fleet/authz/authz.rego" {
			b.Modules[i].Raw = []byte(strings.Replace(string(b.Modules[i].Raw), "import rego.v1", "import rego.v1\n", 1) + "\n# tampered\n")
		}
	}
	var tampered bytes.Buffer
	if err := bundle.Write(&tampered, b); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		bundle []byte
		want   string
	}{
		{"unsigned", buildBundle(t, files, "r1", ""), "missing .signatures.json"},
		{"tampered", tampered.Bytes(), "digest mismatch"},
		{"wrong key", buildBundle(t, files, "r1", wrong.private), "verification"},
	}
	for _, c := range cases {
		_, err := loadPolicySource(writeTemp(t, "x.tar.gz", c.bundle), verify)
		if err == nil {
			t.Errorf("%s bundle loaded with a verification key", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s bundle: error %q, want it to mention %q", c.name, err, c.want)
		}
	}
	// New refuses the same way (start-up).
	_, err := New(context.Background(), Options{Dir: writeTemp(t, "u.tar.gz", cases[0].bundle), BundleVerification: verify, Schema: ResourceList(testResources)})
	if err == nil {
		t.Error("New loaded an unsigned bundle with a verification key")
	}
	// A key with a directory or the embedded set is an error, not ignored.
	if _, err := loadPolicySource("", verify); err == nil {
		t.Error("embedded set with a verification key")
	}
	if _, err := loadPolicySource(t.TempDir(), verify); err == nil {
		t.Error("directory with a verification key")
	}
}

// TestLoadBundleVerificationKey: a key file that is not a PEM public key
// is refused when read, not at the first bundle.
func TestLoadBundleVerificationKey(t *testing.T) {
	keys := newTestKeys(t)
	for name, content := range map[string]string{
		"empty":       "",
		"not PEM":     "hello",
		"private key": keys.private,
	} {
		if _, err := LoadBundleVerification(writeTemp(t, "k.pem", []byte(content))); err == nil {
			t.Errorf("%s key file accepted", name)
		}
	}
	if _, err := LoadBundleVerification(filepath.Join(t.TempDir(), "missing.pem")); err == nil {
		t.Error("missing key file accepted")
	}
}

// TestBundleRefusals: a bundle that carries data documents, or its own
// package fleet.api (other than the routes file), or no module, is
// refused with a message naming it; so is a directory with its own
// fleet.api.
func TestBundleRefusals(t *testing.T) {
	files := embeddedRego(t)
	withData := bundle.Bundle{Manifest: bundle.Manifest{Revision: "d"}, Data: map[string]any{"limits": map[string]any{"max": 1}}}
	for name, src := range files {
		withData.Modules = append(withData.Modules, bundle.ModuleFile{URL: "/" + name, Path: "/" + name, Raw: []byte(src)})
	}
	var data bytes.Buffer
	if err := bundle.Write(&data, withData); err != nil {
		t.Fatal(err)
	}
	api := embeddedRego(t)
	api["fleet/own/routes.rego"] = "package fleet.api\n\nroutes := [\"GET /me\"]\n"

	cases := []struct {
		name   string
		bundle []byte
		want   string
	}{
		{"data", data.Bytes(), "data documents (limits)"},
		{"fleet.api", buildBundle(t, api, "a", ""), "package fleet.api"},
		{"no module", buildBundle(t, map[string]string{}, "e", ""), "no .rego modules"},
		{"not a bundle", []byte("package fleet.authz\n"), "policy bundle"},
	}
	for _, c := range cases {
		_, err := loadPolicySource(writeTemp(t, "x.tar.gz", c.bundle), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	dir := t.TempDir()
	for name, src := range api {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := loadPolicySource(dir, nil); err == nil || !strings.Contains(err.Error(), "package fleet.api") {
		t.Errorf("directory with fleet.api: %v", err)
	}
}

// TestNewFromBundle: an engine built from a signed bundle of the embedded
// set passes the start-up checks and decides as the embedded engine does;
// its revision carries the manifest revision.
func TestNewFromBundle(t *testing.T) {
	keys := newTestKeys(t)
	verify := keys.verification(t)
	path := writeTemp(t, "fleet.tar.gz", buildBundle(t, embeddedRego(t), "2026-11-22.1", keys.private))
	e := newEngine(t, Options{Dir: path, BundleVerification: verify})
	if !strings.HasPrefix(e.Revision(), "2026-11-22.1@") {
		t.Errorf("revision %q", e.Revision())
	}
	ref := engine(t)
	ctx := context.Background()
	for _, typ := range accountTypes() {
		in := principal(typ, "reports").at("GET", "/reports")
		got, err := e.Decide(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Decide(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if got.Allow != want.Allow || got.Code != want.Code {
			t.Errorf("%s: bundle %+v, embedded %+v", typ, got, want)
		}
	}
}
