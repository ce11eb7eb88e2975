package policy

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/keys"
)

// DefaultBundleKeyID is the key id under which a bundle's signature is
// verified when BundleVerification.KeyID is empty: the key id `opa build
// --verification-key` uses when given no --verification-key-id.
const DefaultBundleKeyID = "default"

// DefaultBundleAlgorithm is the signing algorithm of a bundle key when
// BundleVerification.Algorithm is empty (as for `opa build`).
const DefaultBundleAlgorithm = "RS256"

// BundleVerification is the public key that an OPA bundle's
// .signatures.json must verify against (FLEET_POLICY_BUNDLE_KEY), as
// `opa build --verification-key` takes it. A bundle without signatures,
// with a signature of another key, or with a file that does not match its
// signed hash is refused.
type BundleVerification struct {
	// PublicKey is the PEM-encoded public key (or an HMAC secret for an
	// HS* algorithm).
	PublicKey string
	// Algorithm is the JWT signing algorithm; "" means
	// DefaultBundleAlgorithm (RS256).
	Algorithm string
	// KeyID is the id of the key in the signature's "kid" header; ""
	// means DefaultBundleKeyID.
	KeyID string
}

// LoadBundleVerification reads the PEM public key file keyFile (a PKIX
// "PUBLIC KEY", as `openssl rsa -pubout` writes it) into a
// BundleVerification with the default algorithm and key id.
func LoadBundleVerification(keyFile string) (*BundleVerification, error) {
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("bundle verification key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("bundle verification key %s: not a PEM file", keyFile)
	}
	if _, err := x509.ParsePKIXPublicKey(block.Bytes); err != nil {
		return nil, fmt.Errorf("bundle verification key %s: not a PEM public key: %w", keyFile, err)
	}
	return &BundleVerification{PublicKey: string(b)}, nil
}

// config is the OPA verification config of v, as `opa build
// --verification-key` builds it.
func (v *BundleVerification) config() (*bundle.VerificationConfig, error) {
	alg := v.Algorithm
	if alg == "" {
		alg = DefaultBundleAlgorithm
	}
	id := v.KeyID
	if id == "" {
		id = DefaultBundleKeyID
	}
	kc := &keys.Config{Key: v.PublicKey, Algorithm: alg}
	return bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{id: kc}, id, "", nil), nil
}

// loadPolicyBundle reads an OPA bundle (a gzipped tarball, `opa build`
// output) from r. The archive is read by readBundleArchive first, within
// MaxBundleSize, MaxBundleFileSize and MaxBundleFiles, before OPA sees any
// of it; then OPA's bundle reader takes the members from memory
// (memLoader) and, when verify is set, checks the signature (the JWT of
// .signatures.json, before any file is read) and every file's signed hash
// (before the file is parsed), so a bundle without .signatures.json is
// refused. Without verify a signature is not checked. name names the
// bundle in errors. The set is the bundle's Rego files, parsed as a
// directory's are; its revision carries the manifest's revision. A bundle
// that carries data documents, Wasm modules or plans is refused:
// fleetapi's policy reads its input only, so a data document would
// silently be missing from every decision.
func loadPolicyBundle(r io.Reader, name string, verify *BundleVerification) (*policySet, error) {
	members, err := readBundleArchive(r, name)
	if err != nil {
		return nil, err
	}
	reader := bundle.NewCustomReader(&memLoader{members: members}).
		WithSizeLimitBytes(MaxBundleFileSize).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotations(true)
	if verify != nil {
		vc, err := verify.config()
		if err != nil {
			return nil, err
		}
		reader = reader.WithBundleVerificationConfig(vc)
	} else {
		reader = reader.WithSkipBundleVerification(true)
	}
	b, err := reader.Read()
	if err != nil {
		return nil, fmt.Errorf("policy bundle %s: %w", name, err)
	}
	if b.Type() != bundle.SnapshotBundleType {
		return nil, fmt.Errorf("policy bundle %s: a delta bundle is not a policy set", name)
	}
	if len(b.Data) > 0 {
		keys := make([]string, 0, len(b.Data))
		for k := range b.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Errorf("policy bundle %s: carries data documents (%s); fleetapi's policy reads its input only: build the bundle with `opa build -b DIR` from a directory without data.json", name, strings.Join(keys, ", "))
	}
	if len(b.WasmModules) > 0 || len(b.PlanModules) > 0 {
		return nil, fmt.Errorf("policy bundle %s: carries Wasm modules or plans; fleetapi evaluates Rego modules only", name)
	}
	set := newPolicySet()
	set.bundleRevision = b.Manifest.Revision
	set.fromBundle = true
	if set.sequence, err = manifestSequence(b.Manifest); err != nil {
		return nil, fmt.Errorf("policy bundle %s: %w", name, err)
	}
	for _, m := range b.Modules {
		file := strings.TrimPrefix(m.Path, "/")
		if file == "" || strings.Contains(file, ":") {
			return nil, fmt.Errorf("policy bundle %s: module path %q", name, m.Path)
		}
		if _, dup := set.files[file]; dup {
			return nil, fmt.Errorf("policy bundle %s: module %s twice", name, file)
		}
		if err := set.addFile(file, m.Raw); err != nil {
			return nil, fmt.Errorf("policy bundle %s: %w", name, err)
		}
	}
	// The manifest is part of the set's revision (its roots, its revision).
	manifest, err := json.Marshal(b.Manifest)
	if err != nil {
		return nil, err
	}
	set.files[".manifest"] = manifest
	return set.finish(name)
}
