package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/api/ratelimit"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
	"github.com/fleetapi/fleetapi/webhook"
)

// testAPI is the real router over a real database holding the demo data
// and the real embedded policy.
type testAPI struct {
	t       testing.TB
	handler http.Handler
	store   *storage.Store
	db      *storagetest.DB
	srv     *api.Server
}

func newTestAPI(t testing.TB) *testAPI {
	t.Helper()
	return newTestAPIWith(t, nil)
}

// newTestAPIWith builds the test API; configure, when not nil, adjusts the
// configuration (telemetry providers, limits) before the server is built.
// With a tracer or meter provider set, the database handle and the policy
// engine report their spans and metrics there too.
func newTestAPIWith(t testing.TB, configure func(*api.Config)) *testAPI {
	t.Helper()
	ctx := context.Background()
	db := storagetest.New(t)
	if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	// A webhook sealing key for the run (FLEET_WEBHOOK_KEY); configure may
	// take it away.
	var cfg api.Config
	cfg.WebhookKeys = testWebhookKeys(t)
	if configure != nil {
		configure(&cfg)
	}
	store := storage.NewStore(db.DB)
	if cfg.TracerProvider != nil || cfg.MeterProvider != nil {
		traced := storage.Open(db.URL, storage.Options{TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider, MaxOpenConns: 4})
		t.Cleanup(func() { traced.Close() })
		store = storage.NewStore(traced)
	}
	engine, err := policy.New(ctx, policy.Options{Schema: storage.Schema(), TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider})
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	cfg.Auth = &tenancy.Authenticator{Store: store}
	cfg.Policy = engine
	cfg.Store = store
	cfg.Ready = store
	srv, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testAPI{t: t, handler: srv.Handler(), store: store, db: db, srv: srv}
}

// testWebhookKeys is a random webhook sealing key ring for one test.
func testWebhookKeys(t testing.TB) *webhook.KeyRing {
	t.Helper()
	key := make([]byte, webhook.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	ring, err := webhook.NewKeyRing(key)
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// demoToken returns the secret of the demo token with the given name.
func demoToken(t testing.TB, name string) string {
	t.Helper()
	for _, d := range demodata.Tokens() {
		if d.Name == name {
			return d.Secret
		}
	}
	t.Fatalf("no demo token %q", name)
	return ""
}

type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// do sends a request through the real router. headers are name/value pairs.
func (a *testAPI) do(method, path string, body io.Reader, headers ...string) response {
	a.t.Helper()
	req := httptest.NewRequest(method, path, body)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	checkContract(a.t, req, rec) // every response must match the OpenAPI document
	res := response{status: rec.Code, header: rec.Result().Header, raw: rec.Body.Bytes()}
	if rec.Code == http.StatusNoContent {
		if len(res.raw) != 0 {
			a.t.Fatalf("%s %s: 204 with a body %q", method, path, res.raw)
		}
		return res
	}
	if err := json.Unmarshal(res.raw, &res.body); err != nil {
		a.t.Fatalf("%s %s: body is not a JSON object: %v: %q", method, path, err, res.raw)
	}
	return res
}

func (a *testAPI) get(path, token string) response {
	a.t.Helper()
	if token == "" {
		return a.do(http.MethodGet, path, nil)
	}
	return a.do(http.MethodGet, path, nil, "Authorization", "Bearer "+token)
}

// errorCode checks the error envelope of r and returns its code.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	if r.body["success"] != false {
		t.Fatalf("success = %v, want false: %s", r.body["success"], r.raw)
	}
	e, ok := r.body["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object: %s", r.raw)
	}
	if _, ok := e["message"].(string); !ok {
		t.Fatalf("error without message: %s", r.raw)
	}
	r.checkRequestID(t)
	code, _ := e["code"].(string)
	return code
}

// checkRequestID checks that meta.request_id equals the X-Request-Id header.
func (r response) checkRequestID(t *testing.T) {
	t.Helper()
	meta, _ := r.body["meta"].(map[string]any)
	id, _ := meta["request_id"].(string)
	if id == "" || id != r.header.Get("X-Request-Id") {
		t.Fatalf("meta.request_id %q, X-Request-Id %q", id, r.header.Get("X-Request-Id"))
	}
}

func (r response) data(t *testing.T) map[string]any {
	t.Helper()
	if r.body["success"] != true {
		t.Fatalf("success = %v: %s", r.body["success"], r.raw)
	}
	r.checkRequestID(t)
	d, ok := r.body["data"].(map[string]any)
	if !ok {
		t.Fatalf("data is not an object: %s", r.raw)
	}
	return d
}

// exec runs a SQL statement on the test database (fixtures of a test's own).
func (a *testAPI) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := a.db.NewRaw(query, args...).Exec(context.Background()); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// newReplica builds a second server over base's database with its own
// limiter (a replica behind the same load balancer).
func newReplica(t *testing.T, base *testAPI, limiter ratelimit.Limiter, rateLimit int) *testAPI {
	t.Helper()
	engine, err := policy.New(context.Background(), policy.Options{Schema: storage.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{
		Auth: &tenancy.Authenticator{Store: base.store}, Policy: engine, Store: base.store,
		Limiter: limiter, RateLimit: rateLimit, Ready: base.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &testAPI{t: t, handler: srv.Handler(), store: base.store, db: base.db}
}

// httptestRequest builds a request from a given client address.
func httptestRequest(method, path, auth, remote string) *http.Request {
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("Authorization", auth)
	req.RemoteAddr = remote
	return req
}

// serve runs req through the router and returns the status.
func (a *testAPI) serve(req *http.Request) int {
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	return rec.Code
}

func isCI() bool { return os.Getenv("CI") == "true" }
