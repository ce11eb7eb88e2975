package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fleetapi/fleetapi/api"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// testAPI is the real router over a real database holding the demo data
// and the real embedded policy.
type testAPI struct {
	t       *testing.T
	handler http.Handler
	store   *storage.Store
	db      *storagetest.DB
}

func newTestAPI(t *testing.T) *testAPI {
	t.Helper()
	ctx := context.Background()
	db := storagetest.New(t)
	store := storage.NewStore(db.DB)
	if _, err := store.Import(ctx, bytes.NewReader(storage.DemoData())); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	engine, err := policy.New(ctx, policy.Options{ValidateScope: storage.ValidateScope})
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	srv, err := api.New(api.Config{Auth: &tenancy.Authenticator{Store: store}, Policy: engine, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return &testAPI{t: t, handler: srv.Handler(), store: store, db: db}
}

// demoToken returns the secret of the demo token with the given name.
func demoToken(t *testing.T, name string) string {
	t.Helper()
	for _, d := range storage.DemoTokens() {
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
	res := response{status: rec.Code, header: rec.Header(), raw: rec.Body.Bytes()}
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
