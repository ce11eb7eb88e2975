package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// copyRego copies the repository's policy set (policy/rego) to a new
// directory and returns it.
func copyRego(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "..", "policy", "rego"))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// narrowRego makes the set in dir require the reports privilege for
// GET /services (the demo subaccount globex-day, which holds only
// event_notifications, is then denied), without the authz tests that pin
// the old rule.
func narrowRego(t *testing.T, dir string) {
	t.Helper()
	file := filepath.Join(dir, "fleet", "authz", "authz.rego")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte(`"GET /reports": "reports",`)
	if !bytes.Contains(b, old) {
		t.Fatal("authz.rego has no GET /reports privilege")
	}
	b = bytes.Replace(b, old, []byte(`"GET /reports": "reports",
	"GET /services": "reports",`), 1)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "fleet", "authz", "authz_test.rego")); err != nil {
		t.Fatal(err)
	}
}

// readyRevision returns policy_revision of /readyz.
func readyRevision(t *testing.T, addr string) string {
	t.Helper()
	st, body := get(t, "http://"+addr+"/readyz")
	var r struct {
		Revision string `json:"policy_revision"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || st != 200 || r.Revision == "" {
		t.Fatalf("/readyz: %d %s (%v)", st, body, err)
	}
	return r.Revision
}

func demoSecret(t *testing.T, name string) string {
	t.Helper()
	for _, d := range demodata.Tokens() {
		if d.Name == name {
			return d.Secret
		}
	}
	t.Fatalf("no demo token %s", name)
	return ""
}

// TestServeReloadsOnSIGHUP runs the real serve command and sends the
// process SIGHUP: a changed policy directory is loaded (its decision in
// force, its revision on /readyz, in the decision log and alone in
// fleetapi_policy_revision_info on /metrics); a broken set is refused with
// the reason logged and the old set keeps serving.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	db := storagetest.New(t)
	dir := copyRego(t)
	env := map[string]string{
		"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_DECISION_LOG": "stdout",
		"FLEET_POLICY_DIR": dir, "FLEET_POLICY_WATCH": "0", // SIGHUP alone reloads
	}
	runOK(t, env, "import", writeDemoFile(t))
	addr, logs := startServe(t, env)
	client := &http.Client{Timeout: 10 * time.Second}
	tok := demoSecret(t, "globex-day-all")
	services := "http://" + addr + "/api/v2/services"

	revA := readyRevision(t, addr)
	if st := status(t, client, services, tok); st != 200 {
		t.Fatalf("GET /services before the reload: %d", st)
	}
	narrowRego(t, dir)
	if st := status(t, client, services, tok); st != 200 {
		t.Fatalf("the changed directory was loaded without SIGHUP (watch off): %d", st)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	revB := waitRevision(t, addr, revA, logs)
	if st := status(t, client, services, tok); st != 403 {
		t.Fatalf("GET /services after the reload: %d, want 403", st)
	}
	// The decision log's last record is of the new revision (the log is
	// written every FLEET_LOG_FLUSH_INTERVAL: wait for the denial's record).
	type record struct {
		Revision string                       `json:"revision"`
		Bundles  map[string]map[string]string `json:"bundles"`
		Labels   map[string]string            `json:"labels"`
		Custom   struct {
			Code string `json:"code"`
		} `json:"custom"`
	}
	lastRecord := func() (last record) {
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(lines[i], `"decision_id"`) {
				if err := json.Unmarshal([]byte(lines[i]), &last); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		return last
	}
	waitFor(t, "the decision record of the denial", logs, func() bool { return lastRecord().Custom.Code == "PRIVILEGE_REQUIRED" })
	if last := lastRecord(); last.Revision != revB || last.Bundles["fleet"]["revision"] != revB ||
		last.Labels["service"] != "fleetapi" || last.Labels["fleetapi_version"] == "" || last.Labels["id"] == "" {
		t.Errorf("last decision record %+v, want revision %s", last, revB)
	}
	_, metrics := get(t, "http://"+addr+"/metrics")
	if !strings.Contains(metrics, `fleetapi_policy_revision_info{`) || !strings.Contains(metrics, `revision="`+revB+`"} 1`) ||
		strings.Contains(metrics, revA) || strings.Count(metrics, "fleetapi_policy_revision_info{") != 1 {
		t.Errorf("/metrics revision info, want the series of %s alone:\n%s", revB, grepLines(metrics, "revision"))
	}
	if !strings.Contains(metrics, `fleet_policy_reloads_total{`) {
		t.Errorf("/metrics has no reload counter:\n%s", grepLines(metrics, "reload"))
	}

	// A broken set is refused; the old keeps serving.
	f, err := os.OpenFile(filepath.Join(dir, "fleet", "scope", "scope.rego"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("\nservices if {\n")
	f.Close()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, logs, `"msg":"policy reload refused"`)
	if !strings.Contains(logs.String(), "rego_parse_error") {
		t.Errorf("the refusal does not say why:\n%s", grepLines(logs.String(), "refused"))
	}
	if rev := readyRevision(t, addr); rev != revB {
		t.Errorf("revision %s after a refused set, want %s", rev, revB)
	}
	if st := status(t, client, services, tok); st != 403 {
		t.Errorf("GET /services after a refused set: %d, want 403 (the set in force)", st)
	}
}

func waitRevision(t *testing.T, addr, old string, logs *syncBuffer) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if rev := readyRevision(t, addr); rev != old {
			return rev
		}
	}
	t.Fatalf("the revision stayed %s:\n%s", old, grepLines(logs.String(), "policy"))
	return ""
}

func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(logs.String(), want) {
			return
		}
	}
	t.Fatalf("no %s in the log:\n%s", want, grepLines(logs.String(), "policy"))
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// regoBundle builds an OPA bundle of the Rego files under dir with OPA's
// bundle writer, signed with the PEM private key signingKey unless "".
// Each bundle carries the next sequence of the test binary
// (policy.SequenceKey): a bundle built later is newer.
func regoBundle(t *testing.T, dir, revision, signingKey string) []byte {
	t.Helper()
	return regoBundleSeq(t, dir, revision, signingKey, bundleSequence.Add(1))
}

// bundleSequence numbers the bundles regoBundle builds.
var bundleSequence atomic.Int64

// regoBundleSeq is regoBundle with the given sequence (0: none).
func regoBundleSeq(t *testing.T, dir, revision, signingKey string, seq int64) []byte {
	t.Helper()
	b := bundle.Bundle{Manifest: bundle.Manifest{Revision: revision, Roots: &[]string{"fleet"}}, Data: map[string]any{}}
	if seq != 0 {
		b.Manifest.Metadata = map[string]any{policy.SequenceKey: seq}
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".rego" {
			return err
		}
		raw, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		rel = "/" + filepath.ToSlash(rel)
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: rel, Path: rel, Raw: raw})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if signingKey != "" {
		if err := b.GenerateSignature(bundle.NewSigningConfig(signingKey, "RS256", ""), "default", false); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := bundle.Write(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rsaKeys returns a new RSA key pair as PEM: the private key and the path
// of the public key file.
func rsaKeys(t *testing.T) (private, publicFile string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	publicFile = filepath.Join(t.TempDir(), "bundle.pub.pem")
	if err := os.WriteFile(publicFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})), publicFile
}

// TestServeBundle: serve starts from a signed bundle file with its key
// (the manifest revision on /readyz) and refuses to start, with a message
// that says why, from an unsigned bundle when a key is configured, from a
// bundle signed by another key, or from a bundle bomb (a header that
// declares 1 TiB).
func TestServeBundle(t *testing.T) {
	db := storagetest.New(t)
	private, publicFile := rsaKeys(t)
	otherPrivate, _ := rsaKeys(t)
	rego := copyRego(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := map[string]string{"FLEET_DATABASE_URL": db.URL, "FLEET_ADDR": "127.0.0.1:0", "FLEET_POLICY_BUNDLE_KEY": publicFile}
	runOK(t, base, "import", writeDemoFile(t))
	for name, c := range map[string]struct {
		bundle []byte
		want   string
	}{
		"unsigned":  {regoBundle(t, rego, "r1", ""), "bundle missing .signatures.json"},
		"other key": {regoBundle(t, rego, "r1", otherPrivate), "verification"},
		// issue 19 item 2: an error, not "fatal error: runtime: out of memory"
		"bomb": {headerBomb(t, 1<<40), "declares 1099511627776 bytes"},
	} {
		env := map[string]string{"FLEET_POLICY_BUNDLE": write(name+".tar.gz", c.bundle)}
		for k, v := range base {
			env[k] = v
		}
		var out syncBuffer
		err := run(context.Background(), []string{"serve", "--allow-demo-tokens"}, envOf(env), &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "policy: ") {
			t.Errorf("%s bundle: serve returned %v, want a refusal mentioning %q", name, err, c.want)
		}
	}
	env := map[string]string{"FLEET_POLICY_BUNDLE": write("ok.tar.gz", regoBundle(t, rego, "release-7", private))}
	for k, v := range base {
		env[k] = v
	}
	addr, _ := startServe(t, env)
	if rev := readyRevision(t, addr); !strings.HasPrefix(rev, "release-7@") {
		t.Errorf("revision %s, want the manifest revision release-7@…", rev)
	}
}

// TestPolicySourceConfig: conflicting or incomplete policy settings are
// refused before anything starts.
func TestPolicySourceConfig(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]config{
		"dir and bundle":     {PolicyDir: dir, PolicyBundle: "http://127.0.0.1:1/b.tar.gz"},
		"key without bundle": {PolicyBundleKey: filepath.Join(dir, "k.pem")},
		"bundle is a dir":    {PolicyBundle: dir},
		"missing key file":   {PolicyBundle: "http://127.0.0.1:1/b.tar.gz", PolicyBundleKey: filepath.Join(dir, "missing.pem")},
	} {
		if _, err := c.policySource(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	o, err := config{PolicyBundle: "https://127.0.0.1:1/b.tar.gz"}.policySource()
	if err != nil || o.BundleURL == "" || o.Dir != "" {
		t.Errorf("URL source: %+v %v", o, err)
	}
}

// status is the HTTP status of GET url with the bearer token.
func status(t *testing.T, client *http.Client, url, token string) int {
	t.Helper()
	st, _, _, err := getStatus(client, url, token)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
