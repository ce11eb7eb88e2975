package policy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBundleURL: a bundle URL is fetched at start; a poll answered 304
// reloads nothing; a new ETag and revision is loaded; with a verification
// key, an unsigned, a tampered and a wrongly signed bundle are refused
// (the old set serving on, each refused once: its ETag is remembered),
// and a start from a refused bundle fails.
func TestBundleURL(t *testing.T) {
	ctx := context.Background()
	keys := newTestKeys(t)
	wrong := newTestKeys(t)
	verify := keys.verification(t)
	files := embeddedRego(t)
	srv := &bundleServer{}
	srv.set(buildBundle(t, files, "r1", keys.private), `"e1"`)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	e := newEngine(t, Options{BundleURL: ts.URL + "/bundles/fleet.tar.gz", BundleVerification: verify, HTTPClient: ts.Client()})
	rev1 := e.Revision()
	if !strings.HasPrefix(rev1, "r1@") {
		t.Fatalf("revision %s", rev1)
	}
	res, err := e.Reload(ctx, "poll")
	if req, nm := srv.counts(); err != nil || res.Changed || req != 2 || nm != 1 {
		t.Fatalf("304 poll: %+v %v (requests %d, 304s %d)", res, err, req, nm)
	}

	narrowed := embeddedRego(t)
	narrowed["fleet/authz/authz.rego"] = strings.Replace(narrowed["fleet/authz/authz.rego"], `"GET /reports": "reports",`, `"GET /reports": "reports",
	"GET /services": "reports",`, 1)
	delete(narrowed, "fleet/authz/authz_test.rego")
	srv.set(buildBundle(t, narrowed, "r2", keys.private), `"e2"`)
	res, err = e.Reload(ctx, "poll")
	if err != nil || !res.Changed || !strings.HasPrefix(e.Revision(), "r2@") {
		t.Fatalf("new ETag: %+v %v", res, err)
	}
	rev2 := e.Revision()
	if d, _ := e.Decide(ctx, principal("subaccount", "event_notifications").at("GET", "/services")); d.Allow {
		t.Error("the new bundle's decision is not in force")
	}

	// Tampered: a module changed after signing, the signature kept.
	tampered := retamper(t, files, "r3", keys.private)
	for i, c := range []struct {
		name, want string
		body       []byte
	}{
		{"unsigned", "bundle missing .signatures.json", buildBundle(t, files, "r3", "")},
		{"tampered", "digest mismatch", tampered},
		{"wrong key", "verification", buildBundle(t, files, "r3", wrong.private)},
	} {
		srv.set(c.body, fmt.Sprintf(`"bad%d"`, i))
		_, err := e.Reload(ctx, "poll")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s bundle: %v, want a refusal mentioning %q", c.name, err, c.want)
		}
		if e.Revision() != rev2 {
			t.Errorf("%s bundle: revision %s, want %s kept", c.name, e.Revision(), rev2)
		}
		// The refused bundle is not fetched and refused again.
		if _, err := e.Reload(ctx, "poll"); err != nil {
			t.Errorf("%s bundle refused twice: %v", c.name, err)
		}
		// A start from it fails.
		if _, err := New(ctx, Options{BundleURL: ts.URL, BundleVerification: verify, HTTPClient: ts.Client(), Schema: ResourceList(testResources)}); err == nil {
			t.Errorf("%s bundle: New succeeded", c.name)
		}
	}
	srv.set(nil, `"gone"`)
	ts.Config.Handler = http.NotFoundHandler()
	if _, err := e.Reload(ctx, "poll"); err == nil || !strings.Contains(err.Error(), "404") || e.Revision() != rev2 {
		t.Errorf("404: %v, revision %s", err, e.Revision())
	}
}

// retamper builds a bundle signed over files, then changes one module's
// content (the signature of the original kept).
func retamper(t *testing.T, files map[string]string, revision, key string) []byte {
	t.Helper()
	changed := map[string]string{}
	for k, v := range files {
		changed[k] = v
	}
	signedOver := buildBundleParts(t, files, revision, key)
	signedOver.Modules = nil
	for name, src := range changed {
		if name == "fleet/scope/scope.rego" {
			src += "\nservices if input.account.type == \"user\"\n"
		}
		signedOver.Modules = append(signedOver.Modules, moduleFile(name, src))
	}
	return writeBundle(t, signedOver)
}

// TestBundlePollLogsOnce: a bundle URL polled by Watch logs each outcome
// once — a refused (tampered) bundle one "policy reload refused" line and
// no second line repeating its error, a failed fetch one "policy bundle
// poll" line that is not counted as a refusal. Before the fix, Watch
// logged every refusal a second time as "policy bundle poll".
func TestBundlePollLogsOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keys, verify, files := signedSet(t)
	srv := &bundleServer{}
	srv.set(buildBundle(t, files, "r1", keys.private), `"e1"`)
	var notFound atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if notFound.Load() {
			http.NotFound(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	var logs syncBuffer
	e := newEngine(t, Options{BundleURL: ts.URL + "/fleet.tar.gz", BundleVerification: verify, HTTPClient: ts.Client(),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	rev := e.Revision()
	done := make(chan struct{})
	go func() { e.Watch(ctx, 5*time.Millisecond); close(done) }()

	srv.set(retamper(t, files, "r2", keys.private), `"e2"`)
	waitFor(t, "the tampered bundle to be refused", func() bool {
		return strings.Contains(logs.String(), `"msg":"policy reload refused"`)
	}, &logs)
	notFound.Store(true)
	waitFor(t, "the failed fetch to be logged", func() bool {
		return strings.Contains(logs.String(), `"msg":"policy bundle poll"`)
	}, &logs)
	cancel()
	<-done
	out := logs.String()
	if n := strings.Count(out, "digest mismatch"); n != 1 {
		t.Errorf("the tampered bundle's error is logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, `"msg":"policy reload refused"`); n != 1 {
		t.Errorf("%d refusals logged, want 1 (a failed fetch is not a refusal):\n%s", n, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"msg":"policy bundle poll"`) && !strings.Contains(line, "404") {
			t.Errorf("a poll line without the failed fetch's status: %s", line)
		}
	}
	if e.Revision() != rev {
		t.Errorf("revision %s, want %s kept", e.Revision(), rev)
	}
}
